/*
 * What the user sees: --itemize-changes strings, --out-format escapes,
 * --stats and the closing summary, in rsync 3.x's exact layout.
 */
#include "proto/core/logfmt.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "proto/base/fname.h"

/* ------------------------------------------------------------------ */
/* Numbers                                                              */
/* ------------------------------------------------------------------ */

/* rsync groups thousands with ',' unless the locale's decimal point is
 * already ',', in which case it groups with '.'. */
static char thousands_sep(void)
{
	char probe[32];

	snprintf(probe, sizeof probe, "%f", 3.14);
	return strchr(probe, '.') ? ',' : '.';
}

static void copy_out(char *buf, size_t bufsz, const char *s)
{
	if (!bufsz)
		return;
	size_t n = strlen(s);
	if (n >= bufsz)
		n = bufsz - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
}

/* n scaled to K/M/G/T/P with two decimals; false if |n| is below one unit. */
static bool scaled_num(int64_t n, int human, char *buf, size_t bufsz)
{
	static const char units[] = "KMGTP";
	int mult = human == 2 ? 1000 : 1024;
	int u = 0;

	if (n < mult && n > -mult)
		return false;
	double d = (n < 0 ? -(double)n : (double)n) / mult;
	while (d >= mult && u < 4) {
		d /= mult;
		u++;
	}
	snprintf(buf, bufsz, "%.2f%c", n < 0 ? -d : d, units[u]);
	return true;
}

/* do_big_num(): digits, grouped when human, then `tail` (a fraction). */
static const char *big_num(int64_t n, int human, const char *tail, char *buf,
			   size_t bufsz)
{
	char tmp[96];
	char *s = tmp + sizeof tmp - 1;
	uint64_t mag = n < 0 ? (uint64_t)0 - (uint64_t)n : (uint64_t)n;
	char sep = human ? thousands_sep() : 0;
	int run = 0;

	if (human > 1 && scaled_num(n, human, buf, bufsz))
		return buf;
	*s = '\0';
	do {
		if (sep && run == 3) {
			*--s = sep;
			run = 0;
		}
		*--s = (char)('0' + mag % 10);
		mag /= 10;
		run++;
	} while (mag);
	if (n < 0)
		*--s = '-';
	snprintf(buf, bufsz, "%s%s", s, tail ? tail : "");
	return buf;
}

void list_format(const struct ferry_opts *o, const struct file_entry *f, char *out,
		 size_t outsz)
{
	char perms[11], size[32], when[32], name[MAXPATHLEN_WIRE * 2];
	static const char kinds[] = "?pc?d?b?-?l?s???";
	struct tm tm;
	time_t t = (time_t)f->mtime;

	perms[0] = kinds[(f->mode >> 12) & 15];
	for (int i = 0; i < 9; i++)
		perms[1 + i] = (f->mode & (1u << (8 - i))) ? "rwxrwxrwx"[i] : '-';
	if (f->mode & S_ISUID)
		perms[3] = perms[3] == 'x' ? 's' : 'S';
	if (f->mode & S_ISGID)
		perms[6] = perms[6] == 'x' ? 's' : 'S';
	if (f->mode & S_ISVTX)
		perms[9] = perms[9] == 'x' ? 't' : 'T';
	perms[10] = '\0';
	localtime_r(&t, &tm);
	strftime(when, sizeof when, "%Y/%m/%d %H:%M:%S", &tm);
	flist_path(f, name, sizeof name);
	snprintf(out, outsz, "%s %*s %s %s%s%s", perms, o->human ? 14 : 11,
		 fmt_num(fe_size(f), o->human, size, sizeof size), when, name,
		 S_ISLNK(f->mode) && o->links ? " -> " : "",
		 S_ISLNK(f->mode) && o->links ? fe_link(f) : "");
}

bool list_wanted(const struct ferry_opts *o, const struct file_entry *f)
{
	if (!(f->flags & FE_ACTIVE))
		return false;
	return !(S_ISDIR(f->mode) && (f->flags & FE_IMPLIED_DIR) && o->relative &&
		 o->no_implied_dirs);
}

const char *fmt_num(int64_t n, int human, char *buf, size_t bufsz)
{
	return big_num(n, human, NULL, buf, bufsz);
}

const char *fmt_dnum(double d, int human, int decimals, char *buf, size_t bufsz)
{
	char tmp[400];
	const char *frac;

	snprintf(tmp, sizeof tmp, "%.*f", decimals, d);
	if (!human || !isfinite(d) || (d < 1000.0 && d > -1000.0)) {
		copy_out(buf, bufsz, tmp);
		return buf;
	}
	/* Keep the printed fraction (".50"), but take the integer part by
	 * truncation as rsync does: 1234.996 prints "1,234.00". */
	for (frac = tmp + 1; *frac >= '0' && *frac <= '9'; frac++)
		;
	if (d >= 9.2e18 || d <= -9.2e18) {
		copy_out(buf, bufsz, tmp);
		return buf;
	}
	return big_num((int64_t)d, human, frac, buf, bufsz);
}

/* ------------------------------------------------------------------ */
/* %i                                                                   */
/* ------------------------------------------------------------------ */

static uint32_t item_mode(const struct log_item *it)
{
	return it->file ? it->file->mode : it->mode;
}

static char type_char(uint32_t mode)
{
	if (S_ISLNK(mode))
		return 'L';
	if (S_ISDIR(mode))
		return 'd';
	if (S_ISFIFO(mode) || S_ISSOCK(mode))
		return 'S';
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return 'D';
	return 'f';
}

static char update_char(const struct log_item *it)
{
	int fl = it->iflags;

	if (fl & ITEM_LOCAL_CHANGE)
		return fl & ITEM_XNAME_FOLLOWS ? 'h' : 'c';
	if (!(fl & ITEM_TRANSFER))
		return '.';
	return it->sending && !it->local ? '<' : '>'; /* log.c: '<' only off this host */
}

static char flag_char(int fl, int bit, char ch)
{
	return fl & bit ? ch : '.';
}

/* The 's' and 't' positions, which differ for symlinks. */
static void size_time_chars(const struct log_item *it, uint32_t mode, char *c)
{
	int fl = it->iflags;

	if (S_ISLNK(mode)) {
		bool frozen = !it->preserve_times || it->no_symlink_times ||
			      (fl & ITEM_REPORT_TIMEFAIL);
		c[0] = '.';
		c[1] = !(fl & ITEM_REPORT_TIME) ? '.' : frozen ? 'T' : 't';
	} else {
		c[0] = flag_char(fl, ITEM_REPORT_SIZE, 's');
		c[1] = !(fl & ITEM_REPORT_TIME) ? '.' : it->preserve_times ? 't' : 'T';
	}
}

static char times_char(int fl)
{
	int both = ITEM_REPORT_ATIME | ITEM_REPORT_CRTIME;

	if (!(fl & both))
		return '.';
	if ((fl & both) == both)
		return 'b';
	return fl & ITEM_REPORT_ATIME ? 'u' : 'n';
}

/* New items show '+' everywhere, unknown ones '?'; an item with nothing to
 * report (and no transfer) shows blanks. */
static void fill_attrs(char *c, char y, int fl)
{
	int i;

	if (fl & (ITEM_IS_NEW | ITEM_MISSING_DATA)) {
		char ch = fl & ITEM_IS_NEW ? '+' : '?';
		for (i = 2; i < 11; i++)
			c[i] = ch;
		return;
	}
	if (y != '.' && y != 'h' && y != 'c')
		return;
	for (i = 2; i < 11; i++)
		if (c[i] != '.')
			return;
	for (i = 2; i < 11; i++)
		c[i] = ' ';
}

void itemize_string(const struct log_item *it, char out[12])
{
	int fl = it->iflags;
	uint32_t mode = item_mode(it);

	if (it->deleting || (fl & ITEM_DELETED)) {
		memcpy(out, "*deleting  ", 12);
		return;
	}
	out[0] = update_char(it);
	out[1] = type_char(mode);
	out[2] = flag_char(fl, ITEM_REPORT_CHANGE, 'c');
	size_time_chars(it, mode, out + 3);
	out[5] = flag_char(fl, ITEM_REPORT_PERMS, 'p');
	out[6] = flag_char(fl, ITEM_REPORT_OWNER, 'o');
	out[7] = flag_char(fl, ITEM_REPORT_GROUP, 'g');
	out[8] = times_char(fl);
	out[9] = flag_char(fl, ITEM_REPORT_ACL, 'a');
	out[10] = flag_char(fl, ITEM_REPORT_XATTR, 'x');
	out[11] = '\0';
	fill_attrs(out, out[0], fl);
}

/* ------------------------------------------------------------------ */
/* --out-format                                                         */
/* ------------------------------------------------------------------ */

#define VAL_MAX 8192
/* rsync keeps '%', '-' and the width digits in a 32-byte scratch format and
 * stops taking digits at 24 bytes; the next character is then the escape. */
#define SPEC_MAX 24

struct spec {
	bool left, zero, has_width;
	int width;
	int humanize; /* apostrophes */
	char esc;
};

struct out {
	char *p;
	size_t size, len;
};

static void out_mem(struct out *o, const char *s, size_t n)
{
	if (o->len + 1 >= o->size)
		return;
	size_t room = o->size - 1 - o->len;
	if (n > room)
		n = room;
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = '\0';
}

static void out_fill(struct out *o, char ch, int n)
{
	while (n-- > 0 && o->len + 1 < o->size) {
		o->p[o->len++] = ch;
		o->p[o->len] = '\0';
	}
}

/* s padded to the spec's width (printf's "%-Ns" / "%0Nd"). */
static void out_padded(struct out *o, const struct spec *sp, const char *s, bool numeric)
{
	int len = (int)strlen(s);
	int pad = sp->width > len ? sp->width - len : 0;

	if (sp->left) {
		out_mem(o, s, (size_t)len);
		out_fill(o, ' ', pad);
	} else if (numeric && sp->zero && pad) {
		if (*s == '-') {
			out_mem(o, s++, 1);
			len--;
		}
		out_fill(o, '0', pad);
		out_mem(o, s, (size_t)len);
	} else {
		out_fill(o, ' ', pad);
		out_mem(o, s, (size_t)len);
	}
}

/* Parse "%['][-][digits][']X" starting after the '%'. Returns the pointer
 * to the escape character (its NUL if the format ends). */
static const char *parse_spec(const char *p, struct spec *sp)
{
	int used = 1;

	memset(sp, 0, sizeof *sp);
	for (; *p == '\''; p++)
		sp->humanize++;
	if (*p == '-') {
		sp->left = sp->has_width = true;
		p++;
		used++;
	}
	if (*p == '0')
		sp->zero = true;
	for (; *p >= '0' && *p <= '9' && used < SPEC_MAX; p++, used++) {
		sp->has_width = true;
		if (sp->width < VAL_MAX)
			sp->width = sp->width * 10 + (*p - '0');
	}
	if (sp->width > VAL_MAX)
		sp->width = VAL_MAX;
	for (; *p == '\''; p++)
		sp->humanize++;
	sp->esc = *p;
	return p;
}

/* Join up to three strings into val (VAL_MAX bytes), truncating. */
static char *join3(char *val, const char *a, const char *b, const char *c)
{
	const char *parts[3] = { a, b, c };
	size_t len = 0;
	int i;

	for (i = 0; i < 3; i++) {
		size_t n = strlen(parts[i]);
		if (n > VAL_MAX - 1 - len)
			n = VAL_MAX - 1 - len;
		memcpy(val + len, parts[i], n);
		len += n;
	}
	val[len] = '\0';
	return val;
}

static const char *item_name(const struct log_item *it, char *val)
{
	const struct file_entry *f = it->file;

	if (it->name)
		return it->name;
	if (!f || !f->basename)
		return "";
	if (f->dirname && *f->dirname)
		return join3(val, f->dirname, "/", f->basename);
	return f->basename;
}

/* %f: the long name (joined to it->dir), cleaned, without a leading '/'. */
static const char *esc_fullname(const struct log_item *it, char *val)
{
	char name[VAL_MAX];
	const char *n = item_name(it, name);
	size_t dl;

	if (it->dir && *it->dir) {
		dl = strlen(it->dir);
		join3(val, it->dir, it->dir[dl - 1] == '/' ? "" : "/", n);
	} else {
		join3(val, n, "", "");
	}
	clean_fname(val, 0);
	return *val == '/' ? val + 1 : val;
}

/* %n: the short name, '/' after a directory. */
static const char *esc_name(const struct log_item *it, char *val)
{
	char tmp[VAL_MAX];
	const char *n = item_name(it, tmp);

	return join3(val, n, S_ISDIR(item_mode(it)) ? "/" : "", "");
}

/* rsync's timestring(): local "YYYY/MM/DD HH:MM:SS". */
static const char *time_str(int64_t t, char *val)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!localtime_r(&tt, &tm)) {
		strcpy(val, "(time out of range)");
		return val;
	}
	snprintf(val, VAL_MAX, "%4d/%02d/%02d %02d:%02d:%02d", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	return val;
}

static const char *esc_mtime(const struct log_item *it, char *val)
{
	char *c;

	time_str(it->file ? it->file->mtime : 0, val);
	for (c = val; (c = strchr(c, ' ')) != NULL; c++)
		*c = '-';
	return val;
}

/* %B: ls(1)-style permission bits without the type character. */
static const char *esc_perms(uint32_t mode, char *val)
{
	static const char rwx[] = "rwxrwxrwx";
	int i;

	for (i = 0; i < 9; i++)
		val[i] = mode & (1u << (8 - i)) ? rwx[i] : '-';
	if (mode & S_ISUID)
		val[2] = mode & S_IXUSR ? 's' : 'S';
	if (mode & S_ISGID)
		val[5] = mode & S_IXGRP ? 's' : 'S';
	if (mode & S_ISVTX)
		val[8] = mode & S_IXOTH ? 't' : 'T';
	val[9] = '\0';
	return val;
}

/* %C: the file's checksum in rsync's canonical hex order, or blanks. */
static void esc_sum(struct out *o, const struct spec *sp, const struct log_item *it)
{
	static const char hex[] = "0123456789abcdef";
	char val[2 * 64 + 1];
	int n = it->sum_len > 64 ? 64 : it->sum_len < 0 ? 0 : it->sum_len;
	bool reversed = it->sum_type == CSUM_XXH64 || it->sum_type == CSUM_XXH3 ||
			it->sum_type == CSUM_XXH128;
	bool shown = it->sum && S_ISREG(item_mode(it)) && it->sum_type != CSUM_NONE &&
		     it->sum_type != CSUM_MD4_OLD;
	int i;

	if (!shown) { /* rsync pads the blanks without the field width */
		out_fill(o, ' ', 2 * n);
		return;
	}
	for (i = 0; i < n; i++) {
		uint8_t b = it->sum[reversed ? n - 1 - i : i];
		val[2 * i] = hex[b >> 4];
		val[2 * i + 1] = hex[b & 15];
	}
	val[2 * n] = '\0';
	out_padded(o, sp, val, false);
}

/* %L: " -> target", " => hardlink", else "" (or 4 blanks + padding). The
 * width applies to the name after the arrow. */
static void esc_link(struct out *o, const struct spec *sp, const struct log_item *it)
{
	const char *target = "";
	const char *arrow = "    ";

	if (it->xname && *it->xname) {
		target = it->xname;
		arrow = " => ";
	} else if (S_ISLNK(item_mode(it)) && !it->deleting &&
		   !(it->iflags & ITEM_DELETED)) {
		target = it->file && fe_link(it->file) ? fe_link(it->file) : "";
		arrow = " -> ";
	} else if (!sp->has_width) {
		return;
	}
	out_mem(o, arrow, 4);
	out_padded(o, sp, target, false);
}

static int64_t xfer_count(const struct log_item *it, char esc)
{
	if (!(it->iflags & ITEM_TRANSFER))
		return 0;
	return esc == 'b' ? it->bytes_xferred : it->checksum_bytes;
}

/* Escapes whose value is a number. */
static bool esc_number(struct out *o, const struct spec *sp, const struct log_item *it)
{
	char val[128];
	const struct file_entry *f = it->file;

	switch (sp->esc) {
	case 'l':
		fmt_num(f ? fe_size(f) : 0, sp->humanize, val, sizeof val);
		break;
	case 'b':
	case 'c':
		fmt_num(xfer_count(it, sp->esc), sp->humanize, val, sizeof val);
		break;
	case 'p':
		snprintf(val, sizeof val, "%d", (int)getpid());
		out_padded(o, sp, val, true);
		return true;
	case 'U':
		snprintf(val, sizeof val, "%" PRIu32, f && it->preserve_uid ? fe_uid(f) : 0);
		out_padded(o, sp, val, true);
		return true;
	case 'G':
		if (!it->preserve_gid) {
			out_padded(o, sp, "DEFAULT", false);
			return true;
		}
		snprintf(val, sizeof val, "%" PRIu32, f ? fe_gid(f) : 0);
		out_padded(o, sp, val, true);
		return true;
	default:
		return false;
	}
	out_padded(o, sp, val, false);
	return true;
}

/* The string an escape stands for; NULL keeps the escape verbatim. */
static const char *esc_string(const struct spec *sp, const struct log_item *it, char *val)
{
	switch (sp->esc) {
	case 'h': return it->host;
	case 'a': return it->addr;
	case 'u': return it->user;
	case 'P': return it->module_path;
	case 'm': return it->module ? it->module : "";
	case 'o': return it->deleting || (it->iflags & ITEM_DELETED) ? "del."
			 : it->sending ? "send" : "recv";
	case 'f': return esc_fullname(it, val);
	case 'n': return esc_name(it, val);
	case 'M': return esc_mtime(it, val);
	case 't': return time_str((int64_t)time(NULL), val);
	case 'B': return esc_perms(item_mode(it), val);
	case 'i': itemize_string(it, val); return val;
	case '%': return "%";
	default: return NULL;
	}
}

/* Expand one escape; false if it is to be copied verbatim. */
static bool expand_escape(struct out *o, const struct spec *sp, const struct log_item *it)
{
	char val[VAL_MAX];
	const char *s;

	if (sp->esc == 'C') {
		esc_sum(o, sp, it);
		return true;
	}
	if (sp->esc == 'L') {
		esc_link(o, sp, it);
		return true;
	}
	if (esc_number(o, sp, it))
		return true;
	s = esc_string(sp, it, val);
	if (!s)
		return false;
	out_padded(o, sp, s, false);
	return true;
}

void log_format(const char *fmt, const struct log_item *it, char *out, size_t outsz)
{
	struct out o = { out, outsz, 0 };
	const char *p = fmt, *pct, *e;
	struct spec sp;

	if (!outsz)
		return;
	*out = '\0';
	while ((pct = strchr(p, '%')) != NULL) {
		out_mem(&o, p, (size_t)(pct - p));
		e = parse_spec(pct + 1, &sp);
		if (!*e) { /* a dangling "%..." is kept as it is */
			p = pct;
			break;
		}
		if (!expand_escape(&o, &sp, it))
			out_mem(&o, pct, (size_t)(e + 1 - pct));
		p = e + 1;
	}
	out_mem(&o, p, strlen(p));
}

/* ------------------------------------------------------------------ */
/* --stats and the summary                                              */
/* ------------------------------------------------------------------ */

/* "Prefix: N (reg: a, dir: b, ...)", listing only non-zero kinds; "reg" is
 * what the other kinds leave of the total. */
static void print_counts(FILE *fp, const char *prefix, int total, int dirs, int links,
			 int devs, int specials, int human)
{
	static const char *const labels[] = { "reg", "dir", "link", "dev", "special" };
	int counts[5] = { total - (dirs + links + devs + specials), dirs, links, devs,
			  specials };
	const char *pre = " (";
	char num[64];
	int j;

	fprintf(fp, "%s: %s", prefix, fmt_num(total, human != 0, num, sizeof num));
	if (total) {
		for (j = 0; j < 5; j++) {
			if (!counts[j])
				continue;
			fprintf(fp, "%s%s: %s", pre, labels[j],
				fmt_num(counts[j], human != 0, num, sizeof num));
			pre = ", ";
		}
		fputc(')', fp);
	}
	fputc('\n', fp);
}

static void print_size(FILE *fp, const char *label, int64_t n, int human, const char *unit)
{
	char num[64];

	fprintf(fp, "%s: %s%s\n", label, fmt_num(n, human, num, sizeof num), unit);
}

static void print_seconds(FILE *fp, const char *label, int64_t ms, int human)
{
	char num[128];

	fprintf(fp, "%s: %s seconds\n", label,
		fmt_dnum((double)ms / 1000, human != 0, 3, num, sizeof num));
}

void stats_print(FILE *fp, const struct stats *st, int protocol, int human, bool am_sender)
{
	char num[64];

	fputc('\n', fp);
	print_counts(fp, "Number of files", st->num_files, st->num_dirs, st->num_symlinks,
		     st->num_devices, st->num_specials, human);
	if (protocol >= 29)
		print_counts(fp, "Number of created files", st->created_files,
			     st->created_dirs, st->created_symlinks, st->created_devices,
			     st->created_specials, human);
	if (protocol >= 31)
		print_counts(fp, "Number of deleted files", st->deleted_files,
			     st->deleted_dirs, st->deleted_symlinks, st->deleted_devices,
			     st->deleted_specials, human);
	fprintf(fp, "Number of regular files transferred: %s\n",
		fmt_num(st->xferred_files, human != 0, num, sizeof num));
	print_size(fp, "Total file size", st->total_size, human, " bytes");
	print_size(fp, "Total transferred file size", st->total_transferred_size, human,
		   " bytes");
	print_size(fp, "Literal data", st->literal_data, human, " bytes");
	print_size(fp, "Matched data", st->matched_data, human, " bytes");
	print_size(fp, "File list size", st->flist_size, human, "");
	if (st->flist_buildtime_ms) {
		print_seconds(fp, "File list generation time", st->flist_buildtime_ms, human);
		print_seconds(fp, "File list transfer time", st->flist_xfertime_ms, human);
	}
	print_size(fp, "Total bytes sent", st->total_written, human, "");
	print_size(fp, "Total bytes received", st->total_read, human, "");
}

void summary_print(FILE *fp, const struct stats *st, double elapsed_sec, int human,
		   bool dry_run)
{
	char sent[64], recvd[64], rate[128], total[64], speedup[128];
	int64_t bytes = st->total_written + st->total_read;

	fmt_num(st->total_written, human, sent, sizeof sent);
	fmt_num(st->total_read, human, recvd, sizeof recvd);
	if (elapsed_sec < 0)
		copy_out(rate, sizeof rate, "UNKNOWN");
	else
		fmt_dnum((double)bytes / (0.5 + elapsed_sec), human, 2, rate, sizeof rate);
	fmt_num(st->total_size, human, total, sizeof total);
	fmt_dnum((double)st->total_size / (double)bytes, human != 0, 2, speedup,
		 sizeof speedup);
	fprintf(fp, "\nsent %s bytes  received %s bytes  %s bytes/sec\n", sent, recvd, rate);
	fprintf(fp, "total size is %s  speedup is %s%s\n", total, speedup,
		dry_run ? " (DRY RUN)" : "");
}

/* rsync log.c:log_format_has() */
bool log_format_has(const char *format, char esc)
{
	const char *p;
	int width;

	if (!format)
		return false;
	for (p = format; (p = strchr(p, '%')) != NULL;) {
		for (p++; *p == '\''; p++) {}
		width = 1;
		if (*p == '-')
			p++, width++;
		while (isdigit((unsigned char)*p) && width < 32 - 8)
			p++, width++;
		while (*p == '\'')
			p++;
		if (!*p)
			break;
		if (*p == esc)
			return true;
		if (*p == '%')
			p++;
	}
	return false;
}
