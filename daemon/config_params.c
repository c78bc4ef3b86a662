/*
 * The rsyncd.conf parameter table (rsync's daemon-parm.txt, one row per
 * parameter), value parsing for each type, %VAR% expansion, and the
 * --dparam overrides.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>

#include "daemon/config.h"
#include "daemon/config_priv.h"

/* rsync.1.md's --skip-compress default list, as rsync builds it into
 * default-dont-compress.h (define-from-md.awk). */
#define DEFAULT_DONT_COMPRESS \
	"*.3g2 *.3gp *.7z *.aac *.ace *.apk *.avi *.bz2 *.deb *.dmg *.ear *.f4v *.flac " \
	"*.flv *.gpg *.gz *.iso *.jar *.jpeg *.jpg *.lrz *.lz *.lz4 *.lzma *.lzo *.m1a " \
	"*.m1v *.m2a *.m2ts *.m2v *.m4a *.m4b *.m4p *.m4r *.m4v *.mka *.mkv *.mov *.mp1 " \
	"*.mp2 *.mp3 *.mp4 *.mpa *.mpeg *.mpg *.mpv *.mts *.odb *.odf *.odg *.odi *.odm " \
	"*.odp *.ods *.odt *.oga *.ogg *.ogm *.ogv *.ogx *.opus *.otg *.oth *.otp *.ots " \
	"*.ott *.oxt *.png *.qt *.rar *.rpm *.rz *.rzip *.spx *.squashfs *.sxc *.sxd " \
	"*.sxg *.sxm *.sxw *.sz *.tbz *.tbz2 *.tgz *.tlz *.ts *.txz *.tzo *.vob *.war " \
	"*.webm *.webp *.xz *.z *.zip *.zst"

/* A numeric default macro as the config text of a default. */
#define CFG_STR_(x) #x
#define CFG_STR(x) CFG_STR_(x)

/* Offsets that only compile when the field has the type the row claims. */
#define G_(T, f) _Generic(((struct daemon_config *)0)->f, T: offsetof(struct daemon_config, f))
#define M_(T, f) _Generic(((struct daemon_module *)0)->f, T: offsetof(struct daemon_module, f))

#define GSTR(label, f, def) { label, CT_STRING, true, G_(char *, f), def, 0, 0 }
#define GINT(label, f, def, lo, hi) { label, CT_INT, true, G_(int, f), def, lo, hi }
#define GBOOL(label, f, def) { label, CT_BOOL, true, G_(bool, f), def, 0, 0 }
#define GSTARTUPS(label, f, def) \
	{ label, CT_STARTUPS, true, G_(struct max_startups, f), def, 0, 0 }
#define MSTR(label, f, def) { label, CT_STRING, false, M_(char *, f), def, 0, 0 }
#define MPATH(label, f, def) { label, CT_PATH, false, M_(char *, f), def, 0, 0 }
#define MINT(label, f, def, lo, hi) { label, CT_INT, false, M_(int, f), def, lo, hi }
#define MBOOL(label, f, def) { label, CT_BOOL, false, M_(bool, f), def, 0, 0 }
#define MBOOL3(label, f) { label, CT_BOOL3, false, M_(int, f), "unset", 0, 0 }
#define MFAC(label, f, def) { label, CT_FACILITY, false, M_(int, f), def, 0, 0 }

/* mirrors rsync daemon-parm.txt (3.5), in its order. */
static const struct config_param params[] = {
	/* Globals */
	GSTR("address", address, NULL),
	GSTR("daemon chroot", daemon_chroot, NULL),
	GSTR("daemon gid", daemon_gid, NULL),
	GSTR("daemon uid", daemon_uid, NULL),
	GSTR("motd file", motd_file, NULL),
	GSTR("pid file", pid_file, NULL),
	GSTR("proxy protocol hosts", proxy_protocol_hosts, NULL),
	GSTR("socket options", socket_options, NULL),
	/* rsync: 5 (config.h: CONFIG_DEFAULT_LISTEN_BACKLOG says why not) */
	GINT("listen backlog", listen_backlog, CFG_STR(CONFIG_DEFAULT_LISTEN_BACKLOG), 0, INT_MAX),
	GINT("port", port, "0", 0, 65535),
	GBOOL("proxy protocol", proxy_protocol, "no"),
	/* ferry's SSH listener: not in rsync */
	GSTR("ssh host key", ssh_host_key, NULL),
	GINT("ssh port", ssh_port, "0", 0, 65535),
	GINT("ssh login grace time", ssh_login_grace_time, "30", 1, 3600),
	GINT("ssh max auth tries", ssh_max_auth_tries, "6", 1, 100),
	GSTARTUPS("ssh max startups", ssh_max_startups, "10:30:100"),
	GINT("max connections per host", max_connections_per_host, "0", 0, INT_MAX),

	/* Locals (module parameters, also allowed in the global section) */
	MSTR("auth digest", auth_digest, NULL),
	MSTR("auth users", auth_users, NULL),
	MSTR("charset", charset, NULL),
	MSTR("comment", comment, NULL),
	MSTR("dont compress", dont_compress, DEFAULT_DONT_COMPRESS),
	MSTR("early exec", early_exec, NULL),
	MSTR("exclude", exclude, NULL),
	MSTR("exclude from", exclude_from, NULL),
	MSTR("filter", filter, NULL),
	MSTR("gid", gid, NULL),
	MSTR("hosts allow", hosts_allow, NULL),
	MSTR("hosts deny", hosts_deny, NULL),
	MSTR("include", include, NULL),
	MSTR("include from", include_from, NULL),
	MSTR("incoming chmod", incoming_chmod, NULL),
	MSTR("lock file", lock_file, CONFIG_DEFAULT_LOCK_FILE),
	MSTR("log file", log_file, NULL),
	MSTR("log format", log_format, CONFIG_DEFAULT_LOG_FORMAT),
	MSTR("name", name, NULL),
	MSTR("name converter", name_converter, NULL),
	MSTR("outgoing chmod", outgoing_chmod, NULL),
	MSTR("post-xfer exec", post_xfer_exec, NULL),
	MSTR("pre-xfer exec", pre_xfer_exec, NULL),
	MSTR("refuse options", refuse_options, NULL),
	MSTR("secrets file", secrets_file, NULL),
	MSTR("syslog tag", syslog_tag, "rsyncd"),
	MSTR("uid", uid, NULL),
	MPATH("path", path, NULL),
	MPATH("temp dir", temp_dir, NULL),
	MINT("max connections", max_connections, "0", INT_MIN, INT_MAX),
	MINT("max verbosity", max_verbosity, "1", 0, INT_MAX),
	MINT("timeout", timeout, "0", 0, INT_MAX),
	MFAC("syslog facility", syslog_facility, "daemon"),
	MBOOL("fake super", fake_super, "no"),
	MBOOL("forward lookup", forward_lookup, "yes"),
	MBOOL("ignore errors", ignore_errors, "no"),
	MBOOL("ignore nonreadable", ignore_nonreadable, "no"),
	MBOOL("insecure links", insecure_links, "no"),
	MBOOL("list", list, "yes"),
	MBOOL("read only", read_only, "yes"),
	MBOOL("reverse lookup", reverse_lookup, "yes"),
	MBOOL("strict modes", strict_modes, "yes"),
	MBOOL("transfer logging", transfer_logging, "no"),
	MBOOL("write only", write_only, "no"),
	MBOOL3("munge symlinks", munge_symlinks),
	MBOOL3("numeric ids", numeric_ids),
	MBOOL3("open noatime", open_noatime),
	MBOOL3("use chroot", use_chroot),
	/* ferry's SSH listener: not in rsync */
	MPATH("ssh authorized keys", ssh_authorized_keys, NULL),
	MBOOL("ssh allow server", ssh_allow_server, "no"),
};

#define NPARAMS (sizeof params / sizeof params[0])

/* loadparm.c: enum_syslog_facility */
static const struct {
	const char *name;
	int value;
} facilities[] = {
	{ "auth", LOG_AUTH }, { "authpriv", LOG_AUTHPRIV }, { "cron", LOG_CRON },
	{ "daemon", LOG_DAEMON }, { "ftp", LOG_FTP }, { "kern", LOG_KERN },
	{ "lpr", LOG_LPR }, { "mail", LOG_MAIL }, { "news", LOG_NEWS },
	{ "security", LOG_AUTH }, { "syslog", LOG_SYSLOG }, { "user", LOG_USER },
	{ "uucp", LOG_UUCP }, { "local0", LOG_LOCAL0 }, { "local1", LOG_LOCAL1 },
	{ "local2", LOG_LOCAL2 }, { "local3", LOG_LOCAL3 }, { "local4", LOG_LOCAL4 },
	{ "local5", LOG_LOCAL5 }, { "local6", LOG_LOCAL6 }, { "local7", LOG_LOCAL7 },
};

const struct config_param *config_params(size_t *count)
{
	if (count)
		*count = NPARAMS;
	return params;
}

static bool is_blank(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static int upper(int c)
{
	return c >= 'a' && c <= 'z' ? c - 'a' + 'A' : c;
}

/* mirrors rsync loadparm.c:strwiEQ() */
bool cfg_name_eq(const char *a, const char *b)
{
	if (a == b)
		return true;
	if (!a || !b)
		return false;
	for (;;) {
		while (is_blank((unsigned char)*a))
			a++;
		while (is_blank((unsigned char)*b))
			b++;
		if (!*a || !*b)
			break;
		if (upper((unsigned char)*a) != upper((unsigned char)*b))
			break;
		a++;
		b++;
	}
	return *a == *b;
}

/* mirrors rsync loadparm.c:map_parameter() */
const struct config_param *config_param_find(const char *name)
{
	if (!name || *name == '-')
		return NULL;
	for (size_t i = 0; i < NPARAMS; i++)
		if (cfg_name_eq(params[i].label, name))
			return &params[i];
	return NULL;
}

bool config_parse_bool(const char *s, bool *out)
{
	if (!s)
		return false;
	if (cfg_name_eq(s, "yes") || cfg_name_eq(s, "true") || cfg_name_eq(s, "1")) {
		*out = true;
		return true;
	}
	if (cfg_name_eq(s, "no") || cfg_name_eq(s, "false") || cfg_name_eq(s, "0")) {
		*out = false;
		return true;
	}
	return false;
}

static void *field(const struct config_param *p, void *base)
{
	return (char *)base + p->offset;
}

char **cfg_str_field(const struct config_param *p, void *base)
{
	return field(p, base);
}

static bool is_string(const struct config_param *p)
{
	return p->type == CT_STRING || p->type == CT_PATH;
}

/* A value for a message: the expanded text, and what was written when
 * expansion changed it. */
static void quote_value(char *out, size_t outsz, const char *raw, const char *val)
{
	if (strcmp(raw, val) == 0)
		snprintf(out, outsz, "\"%s\"", val);
	else
		snprintf(out, outsz, "\"%s\" (from \"%s\")", val, raw);
}

static int parse_int(const char *s, long *out)
{
	char *end;

	while (is_blank((unsigned char)*s))
		s++;
	if (!*s)
		return -1;
	errno = 0;
	*out = strtol(s, &end, 10);
	if (end == s || errno == ERANGE)
		return -1;
	while (is_blank((unsigned char)*end))
		end++;
	return *end ? -1 : 0;
}

/* One number of a MaxStartups value, ending at stop (':' or '\0'). */
static bool startups_number(const char **s, char stop, int *out)
{
	char *end;

	if (**s < '0' || **s > '9')
		return false;
	errno = 0;
	long n = strtol(*s, &end, 10);
	if (errno || *end != stop || n > INT_MAX)
		return false;
	*out = (int)n;
	*s = *end ? end + 1 : end;
	return true;
}

int config_parse_max_startups(const char *s, struct max_startups *out)
{
	struct max_startups m;

	if (!strchr(s, ':')) {
		if (!startups_number(&s, '\0', &m.full))
			return -1;
		m.start = m.full;
		m.rate = 100;
	} else if (!startups_number(&s, ':', &m.start) || !startups_number(&s, ':', &m.rate) ||
		   !startups_number(&s, '\0', &m.full)) {
		return -1;
	}
	if (m.start < 1 || m.start > m.full || m.full > CONFIG_MAX_STARTUPS_FULL || m.rate > 100)
		return -1;
	*out = m;
	return 0;
}

int cfg_param_set(const struct config_param *p, void *base, const char *value, char *why,
		  size_t whysz)
{
	char shown[CONFIG_MAX_LINE / 2];
	char *val, *copy, **sp;
	bool b;
	long n;
	int rc = 0;

	if (is_string(p)) {
		/* Expanded lazily, at use (loadparm.c: do_parameter). */
		if (!(copy = strdup(value))) {
			snprintf(why, whysz, "out of memory");
			return -1;
		}
		if (p->type == CT_PATH) {
			size_t len = strlen(copy);

			while (len > 1 && copy[len - 1] == '/')
				len--;
			copy[len] = '\0';
		}
		sp = field(p, base);
		free(*sp);
		*sp = copy;
		return 0;
	}

	if (!(val = config_expand(value))) {
		snprintf(why, whysz, "out of memory");
		return -1;
	}
	quote_value(shown, sizeof shown, value, val);
	switch (p->type) {
	case CT_BOOL:
		if (config_parse_bool(val, &b))
			*(bool *)field(p, base) = b;
		else {
			snprintf(why, whysz, "bad boolean %s for \"%s\" (use yes/no, true/false or 1/0)",
				 shown, p->label);
			rc = -1;
		}
		break;
	case CT_BOOL3:
		if (config_parse_bool(val, &b))
			*(int *)field(p, base) = b;
		else if (cfg_name_eq(val, "unset") || cfg_name_eq(val, "-1"))
			*(int *)field(p, base) = CONFIG_UNSET;
		else {
			snprintf(why, whysz,
				 "bad boolean %s for \"%s\" (use yes/no, true/false, 1/0 or unset)",
				 shown, p->label);
			rc = -1;
		}
		break;
	case CT_INT:
		if (parse_int(val, &n) < 0) {
			snprintf(why, whysz, "bad number %s for \"%s\"", shown, p->label);
			rc = -1;
		} else if (n < p->min || n > p->max) {
			snprintf(why, whysz, "value %s for \"%s\" is out of range (%d to %d)", shown,
				 p->label, p->min, p->max);
			rc = -1;
		} else
			*(int *)field(p, base) = (int)n;
		break;
	case CT_FACILITY: {
		size_t i;

		/* loadparm.c: P_ENUM -- a name, or a positive number */
		for (i = 0; i < sizeof facilities / sizeof facilities[0]; i++)
			if (strcasecmp(val, facilities[i].name) == 0)
				break;
		if (i < sizeof facilities / sizeof facilities[0])
			*(int *)field(p, base) = facilities[i].value;
		else if (parse_int(val, &n) == 0 && n > 0 && n <= INT_MAX)
			*(int *)field(p, base) = (int)n;
		else {
			snprintf(why, whysz,
				 "unknown syslog facility %s for \"%s\" (use daemon, user, "
				 "local0 .. local7, auth, authpriv, cron, ftp, kern, lpr, mail, news, "
				 "security, syslog or uucp)",
				 shown, p->label);
			rc = -1;
		}
		break;
	}
	case CT_STARTUPS:
		if (config_parse_max_startups(val, field(p, base)) < 0) {
			snprintf(why, whysz,
				 "bad value %s for \"%s\" (use start:rate:full, with 1 <= start "
				 "<= full <= %d and rate from 0 to 100)",
				 shown, p->label, CONFIG_MAX_STARTUPS_FULL);
			rc = -1;
		}
		break;
	default:
		snprintf(why, whysz, "internal error: bad type for \"%s\"", p->label);
		rc = -1;
	}
	free(val);
	return rc;
}

void cfg_class_free(bool global, void *base)
{
	for (size_t i = 0; i < NPARAMS; i++) {
		if (params[i].global_only != global || !is_string(&params[i]))
			continue;
		char **sp = field(&params[i], base);
		free(*sp);
		*sp = NULL;
	}
}

int cfg_class_copy(bool global, void *dst, const void *src)
{
	int rc = 0;

	for (size_t i = 0; i < NPARAMS; i++) {
		const struct config_param *p = &params[i];

		if (p->global_only != global)
			continue;
		void *d = field(p, dst);
		const void *s = (const char *)src + p->offset;
		switch (p->type) {
		case CT_STRING:
		case CT_PATH: {
			const char *str = *(char *const *)s;

			*(char **)d = NULL;
			if (str && !(*(char **)d = strdup(str)))
				rc = -1;
			break;
		}
		case CT_BOOL:
			*(bool *)d = *(const bool *)s;
			break;
		case CT_STARTUPS:
			memcpy(d, s, sizeof(struct max_startups));
			break;
		default:
			*(int *)d = *(const int *)s;
		}
	}
	if (rc < 0)
		cfg_class_free(global, dst);
	return rc;
}

void cfg_class_defaults(bool global, void *base)
{
	char why[256];

	for (size_t i = 0; i < NPARAMS; i++) {
		const struct config_param *p = &params[i];

		if (p->global_only != global)
			continue;
		if (p->def)
			(void)cfg_param_set(p, base, p->def, why, sizeof why);
		else if (is_string(p)) {
			char **sp = field(p, base);
			free(*sp);
			*sp = NULL;
		}
	}
}

/* ------------------------------------------------------------ expansion */

struct sbuf {
	char *p;
	size_t len, cap;
	bool oom;
};

static void sb_addn(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		char *np;

		while (cap < b->len + n + 1)
			cap *= 2;
		if (!(np = realloc(b->p, cap))) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_addc(struct sbuf *b, char c)
{
	sb_addn(b, &c, 1);
}

enum quote_ctx { Q_NONE, Q_SINGLE, Q_DOUBLE };

/* mirrors rsync loadparm.c:shell_unsafe_value() */
static bool shell_unsafe(const char *v)
{
	for (const char *s = v; *s; s++)
		if (strchr("'\"`$\\;&|<>()*?[]# !~{}", *s) || (unsigned char)*s < 0x20 ||
		    (unsigned char)*s == 0x7f)
			return true;
	return false;
}

/* mirrors rsync loadparm.c:expand_vars_shell_escape() */
static void shell_escape(struct sbuf *b, const char *v, enum quote_ctx q)
{
	if (q != Q_SINGLE)
		sb_addc(b, '\'');
	for (const char *s = v; *s; s++) {
		if (q == Q_DOUBLE && strchr("\\\"`$", *s)) {
			sb_addc(b, '\\');
			sb_addc(b, *s);
		} else if (*s == '\'')
			sb_addn(b, "'\\''", 4);
		else
			sb_addc(b, *s);
	}
	if (q != Q_SINGLE)
		sb_addc(b, '\'');
}

/* mirrors rsync loadparm.c:expand_vars() */
static char *expand(const char *str, bool shell, char *err, size_t errsz)
{
	struct sbuf b = { 0 };
	enum quote_ctx q = Q_NONE;
	bool escaped = false;
	const char *f = str;

	if (!str)
		return NULL;
	sb_addn(&b, "", 0);
	while (*f) {
		if (*f == '%' && f[1] >= 'A' && f[1] <= 'Z') {
			const char *pct = strchr(f + 1, '%');

			if (pct) {
				size_t n = (size_t)(pct - f - 1);
				char *name = malloc(n + 1);
				const char *val;

				if (!name) {
					free(b.p);
					return NULL;
				}
				memcpy(name, f + 1, n);
				name[n] = '\0';
				val = getenv(name);
				if (val) {
					if (shell && strncmp(name, "RSYNC_", 6) == 0) {
						if (shell_unsafe(val)) {
							if (err && errsz)
								snprintf(err, errsz,
									 "refusing to run shell hook: %%%s%% holds a shell metacharacter",
									 name);
							free(name);
							free(b.p);
							return NULL;
						}
						shell_escape(&b, val, q);
					} else
						sb_addn(&b, val, strlen(val));
					free(name);
					f = pct + 1;
					continue;
				}
				free(name);
			}
		}
		if (shell) {
			/* track the template's own quoting, not the values' */
			if (q == Q_SINGLE) {
				if (*f == '\'')
					q = Q_NONE;
			} else if (escaped)
				escaped = false;
			else if (*f == '\\')
				escaped = true;
			else if (q == Q_DOUBLE) {
				if (*f == '"')
					q = Q_NONE;
			} else if (*f == '\'')
				q = Q_SINGLE;
			else if (*f == '"')
				q = Q_DOUBLE;
		}
		sb_addc(&b, *f++);
	}
	if (b.oom) {
		free(b.p);
		if (err && errsz)
			snprintf(err, errsz, "out of memory expanding %%VAR%% references");
		return NULL;
	}
	return b.p;
}

char *config_expand(const char *s)
{
	return expand(s, false, NULL, 0);
}

char *config_expand_shell(const char *s, char *err, size_t errsz)
{
	return expand(s, true, err, errsz);
}

void config_module_free(struct daemon_module *m)
{
	if (!m)
		return;
	cfg_class_free(false, m);
	free(m->defined_at);
	m->defined_at = NULL;
}

static bool is_shell_param(const struct config_param *p)
{
	return p->offset == offsetof(struct daemon_module, early_exec) ||
	       p->offset == offsetof(struct daemon_module, pre_xfer_exec) ||
	       p->offset == offsetof(struct daemon_module, post_xfer_exec) ||
	       p->offset == offsetof(struct daemon_module, name_converter);
}

/* The parameters rsync first reads after authentication, when
 * RSYNC_USER_NAME (and, for the hooks, RSYNC_MODULE_PATH) is set. */
static bool is_late_param(const struct config_param *p)
{
	return is_shell_param(p) || p->offset == offsetof(struct daemon_module, path);
}

static int expand_hooks(struct daemon_module *out, char *err, size_t errsz)
{
	for (size_t i = 0; i < NPARAMS; i++) {
		const struct config_param *p = &params[i];
		char **sp = field(p, out), *x;
		char why[256] = "out of memory";

		if (p->global_only || !is_shell_param(p) || !*sp)
			continue;
		if (!(x = config_expand_shell(*sp, why, sizeof why))) {
			snprintf(err, errsz, "%s", why);
			return -1;
		}
		free(*sp);
		*sp = x;
	}
	return 0;
}

int config_module_expand_late(struct daemon_module *m, char *err, size_t errsz)
{
	if (m->path) {
		char *x = config_expand(m->path);

		if (!x) {
			snprintf(err, errsz, "out of memory");
			return -1;
		}
		free(m->path);
		m->path = x;
		setenv("RSYNC_MODULE_PATH", x, 1);
	}
	return expand_hooks(m, err, errsz);
}

int config_module_expand(const struct daemon_module *m, struct daemon_module *out,
			 char *err, size_t errsz)
{
	memset(out, 0, sizeof *out);
	if (cfg_class_copy(false, out, m) < 0)
		goto oom;
	if (m->defined_at && !(out->defined_at = strdup(m->defined_at)))
		goto oom;
	for (size_t i = 0; i < NPARAMS; i++) {
		const struct config_param *p = &params[i];
		char **sp, *x;

		if (p->global_only || !is_string(p))
			continue;
		sp = field(p, out);
		if (!*sp || is_late_param(p))
			continue;
		if (!(x = config_expand(*sp)))
			goto oom;
		free(*sp);
		*sp = x;
	}
	return 0;
oom:
	config_module_free(out);
	snprintf(err, errsz, "out of memory");
	return -1;
}

/* ------------------------------------------------------------ --dparam */

int config_set_param(struct daemon_config *c, const char *name, const char *value,
		     char *err, size_t errsz)
{
	const struct config_param *p = config_param_find(name);
	char why[CONFIG_MAX_LINE / 2];
	struct config_dparam *nd;
	struct daemon_config scratch;
	int rc;

	if (!p) {
		snprintf(err, errsz, "unknown parameter \"%s\" in --dparam", name ? name : "");
		return -1;
	}
	if (c->loaded) {
		snprintf(err, errsz, "--dparam %s must be set before the config is loaded",
			 p->label);
		return -1;
	}
	if (c->ndparams >= CONFIG_MAX_DPARAMS) {
		snprintf(err, errsz, "too many --dparam options (more than %d)", CONFIG_MAX_DPARAMS);
		return -1;
	}
	if (!value)
		value = "";
	while (*value == ' ' || *value == '\t')
		value++;
	/* check the value now, as rsync's option parsing does */
	memset(&scratch, 0, sizeof scratch);
	rc = cfg_param_set(p, p->global_only ? (void *)&scratch : (void *)&scratch.defaults,
			   value, why, sizeof why);
	cfg_class_free(true, &scratch);
	cfg_class_free(false, &scratch.defaults);
	if (rc < 0) {
		snprintf(err, errsz, "%s in --dparam", why);
		return -1;
	}
	if (!(nd = realloc(c->dparams, (c->ndparams + 1) * sizeof *nd))) {
		snprintf(err, errsz, "out of memory");
		return -1;
	}
	c->dparams = nd;
	nd = &c->dparams[c->ndparams];
	nd->name = strdup(p->label);
	nd->value = strdup(value);
	if (!nd->name || !nd->value) {
		free(nd->name);
		free(nd->value);
		snprintf(err, errsz, "out of memory");
		return -1;
	}
	c->ndparams++;
	return 0;
}

int config_add_dparam(struct daemon_config *c, const char *arg, char *err, size_t errsz)
{
	const char *eq = strchr(arg, '=');
	char *name;
	int rc;

	if (!eq) {
		snprintf(err, errsz, "--dparam value is missing an '=': %s", arg);
		return -1;
	}
	if (!(name = strndup(arg, (size_t)(eq - arg)))) {
		snprintf(err, errsz, "out of memory");
		return -1;
	}
	rc = config_set_param(c, name, eq + 1, err, errsz);
	free(name);
	return rc;
}
