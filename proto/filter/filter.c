/*
 * Filter rules: parsing (exclude.c: parse_rule_tok, parse_filter_str,
 * parse_filter_file, add_rule), per-directory merge files
 * (push_local_filters, pop_local_filters, setup_merge_file). Matching is
 * in filter_match.c, the list on the wire in filter_wire.c, the traces and
 * warnings in filter_trace.c; see filter.h
 * for the API.
 *
 * Where rsync keeps global state (the current directory, which side we
 * are, the active per-dir merge lists) we keep it in the filter_list, and
 * where rsync marks rules "elided" while sending them we instead ask the
 * caller which side a check is for (filter_check's receiver_side).
 */
#include "proto/filter/filter.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/base/fileio.h"

#include "proto/filter/filter_priv.h"
#include "proto/core/flist.h"
#include "proto/base/fname.h"
#include "proto/base/opts.h"
#include "proto/base/oppath.h"
#include "proto/core/session.h"
#include "proto/base/wildmatch.h"

/* rsync drops patterns this long (parse_filter_str: MAXPATHLEN). */
#define MAX_PATTERN MAXPATHLEN_WIRE
/* A merge-file line or a rule on the wire (BIGPATHBUFLEN). */
#define MAX_LINE (MAXPATHLEN_WIRE + 1024)
#define MAX_MERGE_DEPTH 32
/* Flags a merge file's rules take from the merge rule (exclude.c:
 * FILTRULES_FROM_CONTAINER). */
#define FROM_CONTAINER (FR_ABS_PATH | FR_INCLUDE | FR_DIRECTORY | FR_NEGATE | FR_PERISHABLE)

/* Internal parse flags, beside FILTER_PARSE_*. */
#define X_PERDIR 0x100 /* XFLG_ANCHORED2ABS: a per-directory file's rules */

/* What "-C" stands for (rsync's DEFAULT_CVSIGNORE, as documented under
 * --cvs-exclude). */
static const char cvs_default[] =
	"RCS SCCS CVS CVS.adm RCSLOG cvslog.* tags TAGS .make.state .nse_depinfo "
	"*~ #* .#* ,* _$* *$ *.old *.bak *.BAK *.orig *.rej .del-* *.a *.olb *.o "
	"*.obj *.so *.exe *.Z *.elc *.ln core .svn/ .git/ .hg/ .bzr/";

/* Where rules being parsed go, and how to parse them. */
struct pctx {
	struct filter_list *fl;
	struct filter_rules *dst;
	struct filter_dm *dm;   /* reading dm's file for its top level */
	int xflags;             /* FILTER_PARSE_* | X_* */
	const char *anchor;     /* X_PERDIR: prefix for "/..." patterns */
	bool anchor_abs;        /* ... which then become FR_ABS_PATH (parent scan) */
	const char *dir_fs;     /* X_PERDIR: the directory on disk */
	int dir_fd;             /* a directory the caller opened, or -1 */
	const char *dir_fs_of_fd; /* ... and its name: files there go by dir_fd */
	bool open_in_dir;       /* the next parse_file opens its name in dir_fd */
	bool use_given_fd;      /* the next parse_file reads given_fd (-1: */
	int given_fd;           /* could not be opened) instead of its name */
	const char *src_file;   /* reading this file's contents: its name, or
				 * what stands for a name that came from a file */
	int src_line;           /* its line (-1: word split, or not said) */
	const char *next_desc;  /* the next parse_file's file goes by this */
	char *err;
	size_t errsz;
};

/* ------------------------------------------------------------ errors */

static int perr(struct pctx *pc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int perr(struct pctx *pc, const char *fmt, ...)
{
	va_list ap;

	if (pc->err && pc->errsz) {
		va_start(ap, fmt);
		vsnprintf(pc->err, pc->errsz, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* "msg: rule", or where the rule came from instead if it is a file's
 * contents (exclude.c: rule_text): a per-directory file may hold anything
 * on the sending side, and errors must not echo it to the peer. */
static void rule_where(const struct pctx *pc, char *buf, size_t size)
{
	char dir[PATH_MAX];
	const char *file = pc->src_file;
	const char *slash = strrchr(file, '/');

	/* a per-directory file read through the walker's fd goes by the
	 * directory's real name */
	const size_t fd_dir_len = sizeof FS_PROC_FD_DIR - 1;
	if (strncmp(file, FS_PROC_FD_DIR, fd_dir_len) == 0 && slash && slash > file + fd_dir_len) {
		char fdir[64];
		snprintf(fdir, sizeof fdir, "%.*s", (int)(slash - file), file);
		if (realpath(fdir, dir)) {
			if (pc->src_line < 0)
				snprintf(buf, size, "%s%s", dir, slash);
			else
				snprintf(buf, size, "%s%s line %d", dir, slash, pc->src_line);
			return;
		}
	}
	/* one opened by name in the directory the caller opened goes by
	 * that directory's absolute name, as rsync's (its dirbuf is) */
	char full[PATH_MAX * 2 + 2], fdpath[64];
	if (*file != '/' && !strchr(file, '/') && pc->dir_fd >= 0 && pc->dir_fs_of_fd) {
		if (fs_proc_path(fdpath, sizeof fdpath, pc->dir_fd, NULL) && realpath(fdpath, dir)) {
			snprintf(full, sizeof full, "%s/%s", strcmp(dir, "/") ? dir : "", file);
			file = full;
		}
	}
	if (pc->src_line < 0)
		snprintf(buf, size, "%s", file);
	else
		snprintf(buf, size, "%s line %d", file, pc->src_line);
}

static int rule_err_sep(struct pctx *pc, const char *msg, const char *sep, const char *text)
{
	char where[PATH_MAX * 2 + 64];

	if (!pc->src_file)
		return perr(pc, "%s%s%s", msg, sep, text);
	rule_where(pc, where, sizeof where);
	return perr(pc, "%s%s<rule from %s>", msg, sep, where);
}

static int rule_err(struct pctx *pc, const char *msg, const char *text)
{
	return rule_err_sep(pc, msg, ": ", text);
}

/* The name a merge file named by a rule in the file being read goes by:
 * where that rule is, never the name, which the file's contents gave
 * (exclude.c: "a file named at"). Returns a string to free, or NULL. */
static char *named_at(const struct pctx *pc)
{
	char where[PATH_MAX * 2 + 64];
	char *desc;

	rule_where(pc, where, sizeof where);
	if (asprintf(&desc, "a file named at %s", where) < 0)
		return NULL;
	return desc;
}

/* ------------------------------------------------------ rule storage */

static void rule_free(struct filter_list *fl, struct filter_rule *r);

static int rules_push(struct filter_rules *rs, struct filter_rule *r)
{
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 16;
		struct filter_rule **v = realloc(rs->v, cap * sizeof *v);
		if (!v)
			return -1;
		rs->v = v;
		rs->cap = cap;
	}
	rs->v[rs->n++] = r;
	return 0;
}

/* Free the rules from index n on (newest first). */
static void rules_truncate(struct filter_list *fl, struct filter_rules *rs, size_t n)
{
	while (rs->n > n)
		rule_free(fl, rs->v[--rs->n]);
}

bool filter_list_has_dir_merge(const struct filter_list *fl)
{
	return fl && fl->ndms > 0;
}

static void dm_unregister(struct filter_list *fl, struct filter_dm *dm)
{
	for (size_t i = 0; i < fl->ndms; i++) {
		if (fl->dms[i] == dm) {
			memmove(&fl->dms[i], &fl->dms[i + 1], (fl->ndms - i - 1) * sizeof *fl->dms);
			fl->ndms--;
			return;
		}
	}
}

/* exclude.c: teardown_mergelist */
static void dm_free(struct filter_list *fl, struct filter_dm *dm)
{
	dm_unregister(fl, dm);
	rules_truncate(fl, &dm->rules, 0);
	free(dm->rules.v);
	free(dm->lv);
	free(dm->fname);
	free(dm);
}

static void rule_free(struct filter_list *fl, struct filter_rule *r)
{
	if (r->dm)
		dm_free(fl, r->dm);
	free(r->pattern);
	free(r);
}

void filter_list_init(struct filter_list *fl)
{
	memset(fl, 0, sizeof *fl);
	fl->protocol = PROTOCOL_NEWEST;
}

void filter_list_free(struct filter_list *fl)
{
	if (!fl)
		return;
	rules_truncate(fl, &fl->rules, 0);
	rules_truncate(fl, &fl->cvs, 0);
	free(fl->rules.v);
	free(fl->cvs.v);
	free(fl->dms);
	free(fl->abs_root);
	free(fl->trace_pending);
	filter_list_init(fl);
}

size_t filter_list_count(const struct filter_list *fl)
{
	return fl ? fl->rules.n : 0;
}

/* --------------------------------------------------------- rule text */

/* exclude.c: RULE_STRCMP: s starts with the long rule name `word`,
 * followed by a separator. Returns where modifier parsing starts: on the
 * name's last letter, or on a ',' after it. */
static const char *rule_word(const char *s, const char *word)
{
	size_t n = strlen(word);

	if (strncmp(s, word, n) != 0)
		return NULL;
	if (isspace((unsigned char)s[n]) || s[n] == '_' || !s[n])
		return s + n - 1;
	if (s[n] == ',')
		return s + n;
	return NULL;
}

/* The rule's one-letter kind in *ch (0 if unknown) and where its
 * modifiers start (minus one), as parse_rule_tok's first switch. */
static const char *rule_name(const char *s, char *ch)
{
	static const struct {
		char ch;
		const char *word;
	} names[] = {
		{ '!', "clear" }, { ':', "dir-merge" }, { '-', "exclude" },
		{ 'H', "hide" }, { '+', "include" }, { '.', "merge" },
		{ 'P', "protect" }, { 'R', "risk" }, { 'S', "show" },
	};

	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (*s == names[i].word[0]) {
			const char *p = rule_word(s, names[i].word);
			*ch = p ? names[i].ch : 0;
			return p;
		}
	}
	*ch = *s;
	return s[1] == ',' ? s + 1 : s;
}

/* Flags of a rule kind; *side if the kind itself names the side. */
static bool rule_kind(char ch, uint32_t *f, bool *side)
{
	switch (ch) {
	case ':': *f |= FR_PERDIR_MERGE | FR_MERGE_FILE; return true;
	case '.': *f |= FR_MERGE_FILE; return true;
	case '+': *f |= FR_INCLUDE; return true;
	case '-': return true;
	case 'S': *f |= FR_INCLUDE; /* FALLTHROUGH */
	case 'H': *f |= FR_SENDER_SIDE; *side = true; return true;
	case 'R': *f |= FR_INCLUDE; /* FALLTHROUGH */
	case 'P': *f |= FR_RECEIVER_SIDE; *side = true; return true;
	case '!': *f |= FR_CLEAR_LIST; return true;
	default: return false;
	}
}

/* One modifier letter (parse_rule_tok's second switch); false if it is
 * not valid here. */
static bool rule_modifier(char m, uint32_t *f, bool side)
{
	bool merge = *f & FR_MERGE_FILE;

	switch (m) {
	case '-':
	case '+':
		if (!merge || *f & FR_NO_PREFIXES)
			return false;
		*f |= FR_NO_PREFIXES | (m == '+' ? FR_INCLUDE : 0);
		return true;
	case '/': *f |= FR_ABS_PATH; return true;
	case '!':
		/* negation goes with a pattern, not a merge file's defaults */
		if (merge)
			return false;
		*f |= FR_NEGATE;
		return true;
	case 'C':
		if (*f & FR_NO_PREFIXES || side)
			return false;
		*f |= FR_NO_PREFIXES | FR_WORD_SPLIT | FR_NO_INHERIT | FR_CVS_IGNORE;
		return true;
	case 'e': *f |= FR_EXCLUDE_SELF; return merge;
	case 'n': *f |= FR_NO_INHERIT; return merge;
	case 'w': *f |= FR_WORD_SPLIT; return merge;
	case 'p': *f |= FR_PERISHABLE; return true;
	case 'r': *f |= FR_RECEIVER_SIDE; return !side;
	case 's': *f |= FR_SENDER_SIDE; return !side;
	case 'x': *f |= FR_XATTR; return true;
	default: return false;
	}
}

/* A new-style rule's prefix and modifiers (parse_rule_tok's non-legacy
 * branch). *sp is advanced to the pattern. */
static int parse_prefix(struct pctx *pc, const char **sp, const char *start,
			uint32_t tflags, uint32_t *f)
{
	char ch;
	bool side = false;
	const char *s = rule_name(*sp, &ch);

	if (!s || !rule_kind(ch, f, &side))
		return rule_err(pc, "Unknown filter rule", start);
	while (ch != '!' && *++s && *s != ' ' && *s != '_') {
		if (tflags & FR_WORD_SPLIT && isspace((unsigned char)*s)) {
			s--;
			break;
		}
		if (!rule_modifier(*s, f, side)) {
			if (pc->src_file)
				return rule_err(pc, "invalid modifier in filter rule", start);
			return perr(pc, "invalid modifier '%c' at position %d in filter rule: %s",
				    *s, (int)(s - start), start);
		}
	}
	if (*s)
		s++;
	*sp = s;
	return 0;
}

struct tok {
	uint32_t flags;
	const char *pat;
	size_t len;
};

/* exclude.c: parse_rule_tok. The next rule of *sp into t; returns 1, 0
 * at the end of the text, -1 on a syntax error. tflags are the enclosing
 * merge rule's (the template). */
static int parse_rule_tok(struct pctx *pc, const char **sp, uint32_t tflags, struct tok *t)
{
	const char *s = *sp, *start;
	uint32_t f;

	if (tflags & FR_WORD_SPLIT) {
		while (isspace((unsigned char)*s))
			s++;
	}
	if (!*s)
		return 0;
	start = s;
	f = tflags & FROM_CONTAINER;
	if (tflags & FR_NO_PREFIXES) {
		if (*s == '!' && tflags & FR_CVS_IGNORE)
			f |= FR_CLEAR_LIST; /* tentative, see below */
	} else if (pc->xflags & FILTER_PARSE_OLD_PREFIXES) {
		if ((*s == '-' || *s == '+') && s[1] == ' ') {
			f = *s == '+' ? f | FR_INCLUDE : f & ~FR_INCLUDE;
			s += 2;
		} else if (*s == '!') {
			f |= FR_CLEAR_LIST;
		}
	} else if (parse_prefix(pc, &s, start, tflags, &f) < 0) {
		return -1;
	}
	if (tflags & FR_SIDES) {
		if (f & FR_SIDES)
			return rule_err(pc, "specified-side merge file contains specified-side filter",
					start);
		f |= tflags & FR_SIDES;
	}
	size_t len = 0;
	if (tflags & FR_WORD_SPLIT) {
		while (s[len] && !isspace((unsigned char)s[len]))
			len++;
	} else {
		len = strlen(s);
	}
	if (f & FR_CLEAR_LIST) {
		if (!(tflags & FR_NO_PREFIXES) && !(pc->xflags & FILTER_PARSE_OLD_PREFIXES) && len)
			return rule_err(pc, "'!' rule has trailing characters", start);
		if (len > 1)
			f &= ~FR_CLEAR_LIST; /* "!foo" is just a pattern */
	} else if (!len && !(f & FR_CVS_IGNORE)) {
		return rule_err(pc, "unexpected end of filter rule", start);
	}
	/* --delete-excluded makes a plain include/exclude sender-only. */
	if (pc->xflags & FILTER_PARSE_DELETE_EXCLUDED &&
	    !(f & (FR_SIDES | FR_MERGE_FILE | FR_PERDIR_MERGE)))
		f |= FR_SENDER_SIDE;
	t->flags = f;
	t->pat = s;
	t->len = len;
	*sp = s + len;
	return 1;
}

/* ----------------------------------------------------------- add_rule */

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* A dir-merge rule's state, unless a dir-merge of the same file name is
 * already active (then the rule is dropped, as add_rule does). */
static int dm_attach(struct filter_list *fl, struct filter_rule *r, bool *dup)
{
	const char *base = base_name(r->pattern);
	struct filter_dm *dm;

	*dup = false;
	for (size_t i = 0; i < fl->ndms; i++) {
		if (strcmp(fl->dms[i]->fname, base) == 0) {
			*dup = true;
			return 0;
		}
	}
	if (fl->ndms == fl->dmcap) {
		size_t cap = fl->dmcap ? fl->dmcap * 2 : 4;
		struct filter_dm **v = realloc(fl->dms, cap * sizeof *v);
		if (!v)
			return -1;
		fl->dms = v;
		fl->dmcap = cap;
	}
	if (!(dm = calloc(1, sizeof *dm)) || !(dm->fname = strdup(base))) {
		free(dm);
		return -1;
	}
	dm->owner = r;
	r->dm = dm;
	fl->dms[fl->ndms++] = dm;
	return 0;
}

/* --debug=FILTER: the rule being added, as rsync's add_rule traces it;
 * a rule from a file shows where it is from, and nothing about its text
 * (not even its trailing whitespace: exclude.c, rule_detail). */
static void trace_rule(struct pctx *pc, const char *pat, size_t len, uint32_t f)
{
	struct filter_list *fl = pc->fl;
	bool ws = len && (pat[len - 1] == ' ' || pat[len - 1] == '\t');

	if (!fl->trace_who || fl->trace_level < (ws ? 1 : 2))
		return;
	bool hidden = pc->src_file || pc->xflags & FILTER_PARSE_FROM_FILE;
	char prefix[16] = "", where[PATH_MAX * 2 + 64], list[PATH_MAX + 64] = "";
	struct filter_rule r = {.flags = f, .pattern = (char *)""};
	if (!hidden && filter_rule_prefix(&r, false, fl->protocol, false, false, prefix) < 0)
		prefix[0] = '\0';
	if (pc->src_file)
		rule_where(pc, where, sizeof where);
	else
		snprintf(where, sizeof where, "a file read earlier");
	if (pc->dst == &fl->cvs)
		snprintf(list, sizeof list, " [global CVS]");
	else if (pc->dm)
		snprintf(list, sizeof list, " [per-dir %s]",
			 pc->dm->owner->flags & FR_FROM_FILE ? "<rule from a file read earlier>"
							     : pc->dm->fname);
	char *line = NULL;
	int n = hidden ? asprintf(&line, "[%s] add_rule(<rule from %s>)%s\n", fl->trace_who,
				  where, list)
		       : asprintf(&line, "[%s] add_rule(%s%.*s)%s%s\n", fl->trace_who, prefix,
				  (int)len, pat, list,
				  ws ? " -- CAUTION: trailing whitespace!" : "");
	if (n >= 0)
		filter_note_emit(fl, 'T', line);
	free(line);
}

/* exclude.c: add_rule. In a per-directory file an anchored pattern gets
 * the file's directory in front, so "/foo" only matches there. */
static int add_rule(struct pctx *pc, const char *pat, size_t len, uint32_t f)
{
	const char *pre = "", *cp;
	size_t plen = 0;
	struct filter_rule *r;

	trace_rule(pc, pat, len, f);

	if (len > 1 && pat[len - 1] == '/') {
		len--;
		f |= FR_DIRECTORY;
	}
	const char *suffix = "";
	if (pc->xflags & FILTER_PARSE_DIR2WILD3 && (f & (FR_DIRECTORY | FR_INCLUDE)) == FR_DIRECTORY) {
		f &= ~FR_DIRECTORY;
		suffix = "/***";
	}
	size_t slen = strlen(suffix);
	if (pc->xflags & X_PERDIR && *pat == '/' && !(f & (FR_ABS_PATH | FR_MERGE_FILE))) {
		pre = pc->anchor;
		plen = strlen(pre);
		if (pc->anchor_abs)
			f |= FR_ABS_PATH;
	}
	if (!(r = calloc(1, sizeof *r)) || !(r->pattern = malloc(plen + len + slen + 1))) {
		free(r);
		return perr(pc, "out of memory");
	}
	memcpy(r->pattern, pre, plen);
	memcpy(r->pattern + plen, pat, len);
	memcpy(r->pattern + plen + len, suffix, slen + 1);
	len += slen;
	for (cp = r->pattern; *cp; cp++)
		r->slash_cnt += *cp == '/';
	if (strpbrk(r->pattern, "*[?")) {
		f |= FR_WILD;
		if ((cp = strstr(r->pattern, "**")) != NULL) {
			f |= FR_WILD2;
			if (cp == r->pattern)
				f |= FR_WILD2_PREFIX;
			if (plen + len >= 3 && !strcmp(r->pattern + plen + len - 3, "***"))
				f |= FR_WILD3_SUFFIX;
		}
	}
	r->flags = f | (pc->src_file || pc->xflags & FILTER_PARSE_FROM_FILE ? FR_FROM_FILE : 0);
	if (f & FR_PERDIR_MERGE) {
		bool dup;
		if (dm_attach(pc->fl, r, &dup) < 0 || dup) {
			rule_free(pc->fl, r);
			return dup ? 0 : perr(pc, "out of memory");
		}
	}
	if (rules_push(pc->dst, r) < 0) {
		rule_free(pc->fl, r);
		return perr(pc, "out of memory");
	}
	return 0;
}

/* ------------------------------------------------------ merge files */

static int parse_str(struct pctx *pc, const char *text, uint32_t tflags);

/* Read one line (or word) of a merge file into line; false at EOF with
 * nothing read. Overlong lines are dropped, as rsync does. */
static bool read_line(FILE *fp, bool word_split, char *line, size_t max, bool *more,
		      bool *overflow)
{
	size_t n = 0;
	bool any = false;
	int ch;

	while ((ch = getc(fp)) != EOF) {
		any = true;
		if (word_split && isspace(ch))
			break;
		if (ch == '\n' || ch == '\r') {
			if (ch == '\r') { /* CRLF is one line */
				int nx = getc(fp);
				if (nx != '\n' && nx != EOF)
					ungetc(nx, fp);
			}
			break;
		}
		if (n + 1 < max)
			line[n++] = (char)ch;
		else
			*overflow = true;
	}
	line[*overflow ? 0 : n] = '\0';
	*more = ch != EOF;
	return any;
}

/* A merge file's path is the operator's (oppath.h): no other user's
 * symlink is followed on the way, and under --confine-root it must end
 * inside that directory. On a server the name comes from the peer's
 * rules, so not even a trusted link is followed at the leaf. atfd is
 * where a relative path starts. */
static int open_merge_file(const struct filter_list *fl, int atfd, const char *path)
{
	int root = fl->confined_root ? fl->confine_fd : -1;

	if (!fl->from_peer)
		return oppath_open_under(root, atfd, path, O_RDONLY, 0, fl->oppath_how);
	const char *leaf;
	int dir = oppath_open_parent_under(root, atfd, path, &leaf, fl->oppath_how | OPPATH_QUIET);
	if (dir < 0)
		return -1;
	int fd = openat(dir, leaf, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	int e = errno;
	close(dir);
	errno = e;
	return fd;
}

/* exclude.c: parse_filter_file. A missing file is an error only when
 * fatal (a '.' rule); per-directory files are optional. */
static int parse_file(struct pctx *pc, const char *path, uint32_t tflags, bool fatal)
{
	struct filter_list *fl = pc->fl;
	bool use_stdin = !strcmp(path, "-") && !fl->from_peer;
	bool word_split = tflags & FR_WORD_SPLIT, more = true;
	const char *save_file = pc->src_file;
	int save_line = pc->src_line, rc = 0;
	char *line;
	FILE *fp = NULL;

	if (!*path)
		return 0;
	if (fl->merge_depth >= MAX_MERGE_DEPTH) {
		if (!fatal)
			return 0;
		fl->err_io = true;
		return rule_err_sep(pc, "merge-file include depth limit (32) exceeded at", " ", path);
	}
	bool in_dir = pc->open_in_dir; /* only this file, not the ones it merges */
	bool given = pc->use_given_fd;
	pc->open_in_dir = pc->use_given_fd = false;
	if (given) {
		if (pc->given_fd >= 0 && !(fp = fdopen(pc->given_fd, "rb")))
			close(pc->given_fd);
	} else if (use_stdin) {
		fp = stdin;
	} else if (in_dir) {
		/* a receiver's merge file, in a directory the transfer may
		 * have written: never through a symlink; under --confine-root
		 * a ".." in the name may not lead out of it either */
		int fd = fl->confined_root ? open_merge_file(fl, pc->dir_fd, path)
					   : openat(pc->dir_fd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0 && !(fp = fdopen(fd, "rb")))
			close(fd);
	} else {
		int fd = open_merge_file(fl, AT_FDCWD, path);
		if (fd >= 0 && !(fp = fdopen(fd, "rb")))
			close(fd);
	}
	const char *desc = pc->next_desc;
	pc->next_desc = NULL;
	if (!fp) {
		if (!fatal)
			return 0;
		fl->err_io = true;
		fl->open_failed = pc->src_file ? FILTER_OPEN_HIDDEN : FILTER_OPEN_NAMED;
		if (pc->src_file) /* nor errno: it says whether the path exists */
			return rule_err_sep(pc, tflags & FR_INCLUDE ? "failed to open include file"
								    : "failed to open exclude file",
					    " ", path);
		return perr(pc, "failed to open %sclude file %s: %s (%d)",
			    tflags & FR_INCLUDE ? "in" : "ex", path, strerror(errno), errno);
	}
	if (!(line = malloc(MAX_LINE))) {
		if (fp != stdin)
			fclose(fp);
		return perr(pc, "out of memory");
	}
	/* a file named by another file's contents goes by where it was
	 * named, as one the caller describes goes by that */
	char *own = !desc && pc->src_file ? named_at(pc) : NULL;
	if (own)
		desc = own;
	fl->merge_depth++;
	pc->src_file = desc ? desc : path;
	pc->src_line = word_split || desc ? -1 : 0;
	bool overflow = false;
	while (rc == 0 && more && read_line(fp, word_split, line, MAX_LINE, &more, &overflow)) {
		if (pc->src_line >= 0)
			pc->src_line++;
		if (overflow) {
			char where[PATH_MAX * 2 + 64];
			rule_where(pc, where, sizeof where);
			filter_note(fl, 'W', "discarding over-long filter: <rule from %s>", where);
			overflow = false;
		}
		/* empty lines and (unless word-split) ';'/'#' comments */
		if (*line && (word_split || (*line != ';' && *line != '#')))
			rc = parse_str(pc, line, tflags);
	}
	fl->merge_depth--;
	pc->src_file = save_file;
	pc->src_line = save_line;
	free(own);
	free(line);
	if (fp != stdin)
		fclose(fp);
	return rc;
}

/* Any ".." component? */
static bool has_dotdot(const char *p)
{
	for (const char *s = p; (s = strstr(s, "..")) != NULL; s += 2) {
		if ((s == p || s[-1] == '/') && (s[2] == '/' || !s[2]))
			return true;
	}
	return false;
}

/* A client's '.' rule on a daemon: the name is inside the module ("/"
 * is its root), resolved beneath it, and a file the module's rules hide
 * is as if absent, without a word (exclude.c: parse_filter_file with
 * daemon_filter_list). */
static int merge_in_module(struct pctx *pc, const char *path, uint32_t tflags)
{
	const struct filter_list *fl = pc->fl;
	const char *rel = path;
	int saved = pc->xflags;

	while (*rel == '/')
		rel++;
	if (!*rel || has_dotdot(rel))
		return rule_err(pc, "merge-file name outside the transfer", path);
	if (fl->peer_merge_hidden && filter_check(fl->peer_merge_hidden, rel, false, false) < 0)
		return 0;
	pc->use_given_fd = true;
	pc->given_fd = fs_open_beneath(fl->peer_merge_root, rel, O_RDONLY);
	pc->xflags &= ~X_PERDIR;
	int rc = parse_file(pc, path, tflags, true);
	pc->xflags = saved;
	return rc;
}

/* A '.' rule: read the file now (exclude.c: parse_merge_name then
 * parse_filter_file). As rsync, a name without a slash is used as is,
 * one with a slash inside a per-directory file is relative to it. */
static int merge_now(struct pctx *pc, const struct tok *t)
{
	/* rsync reads directories' files from the transfer root, so there a
	 * bare name is the root's */
	const char *base = pc->dir_fs && !memchr(t->pat, '/', t->len) && pc->fl->abs_root
				   ? pc->fl->abs_root : pc->dir_fs;
	size_t dl = base ? strlen(base) + 1 : 0;
	char *path = malloc(dl + t->len + 1);
	int saved = pc->xflags, rc;

	if (!path)
		return perr(pc, "out of memory");
	memcpy(path, t->pat, t->len);
	path[t->len] = '\0';
	if ((pc->xflags & FILTER_PARSE_FROM_PEER) && pc->fl->peer_merge_ok && !pc->dm) {
		rc = merge_in_module(pc, path, t->flags);
	} else if (pc->xflags & FILTER_PARSE_FROM_PEER) {
		rc = rule_err(pc, "merge-file rules are not accepted from the remote side", path);
	} else if (pc->fl->from_peer && (*path == '/' || has_dotdot(path))) {
		rc = rule_err(pc, "merge-file name outside the transfer", path);
	} else {
		if (dl && *path != '/' && (strchr(path, '/') || base != pc->dir_fs)) {
			memmove(path + dl, path, t->len + 1);
			memcpy(path, base, dl - 1);
			path[dl - 1] = '/';
		}
		/* a merged file's rules are global ones (XFLG_FATAL_ERRORS only) */
		pc->xflags &= ~X_PERDIR;
		rc = parse_file(pc, path, t->flags, true);
		pc->xflags = saved;
	}
	free(path);
	return rc;
}

/* exclude.c: get_cvs_excludes: the rules a "-C" rule stands for. */
static int load_cvs(struct pctx *pc, uint32_t rflags)
{
	struct filter_list *fl = pc->fl;
	struct pctx sub = *pc;
	const char *home = getenv("HOME"), *env = getenv("CVSIGNORE");
	char path[PATH_MAX];
	int rc;

	if (fl->cvs_loaded)
		return 0;
	fl->cvs_loaded = true;
	sub.dst = &fl->cvs;
	sub.dm = NULL;
	sub.xflags &= ~X_PERDIR;
	sub.src_file = NULL;
	rc = parse_str(&sub, cvs_default, rflags | (fl->protocol >= 30 ? FR_PERISHABLE : 0));
	if (rc == 0 && home && snprintf(path, sizeof path, "%s/.cvsignore", home) < (int)sizeof path)
		rc = parse_file(&sub, path, rflags, false);
	if (rc == 0 && env)
		rc = parse_str(&sub, env, rflags);
	return rc;
}

/* '!': clear the list being added to. In a per-directory file only that
 * file's rules so far, and the inherited ones stop applying. */
static void clear_list(struct pctx *pc)
{
	if (pc->dm && pc->dst == &pc->dm->rules && pc->dm->nlv) {
		struct dm_level *lv = &pc->dm->lv[pc->dm->nlv - 1];
		rules_truncate(pc->fl, pc->dst, lv->start);
		lv->cut = true;
		return;
	}
	rules_truncate(pc->fl, pc->dst, 0);
}

/* exclude.c: parse_filter_str */
static int parse_str(struct pctx *pc, const char *text, uint32_t tflags)
{
	const char *s = text;
	struct tok t = { 0, NULL, 0 };
	int rc;

	while ((rc = parse_rule_tok(pc, &s, tflags, &t)) > 0) {
		if (t.len >= MAX_PATTERN) {
			/* the user's own rule in full; a file's by where it is */
			char where[PATH_MAX * 2 + 64];
			if (pc->src_file) {
				rule_where(pc, where, sizeof where);
				filter_note(pc->fl, 'W', "discarding over-long filter: <rule from %s>", where);
			} else if (pc->xflags & FILTER_PARSE_FROM_FILE)
				filter_note(pc->fl, 'W', "discarding over-long filter: "
					    "<rule from a file read earlier>");
			else
				filter_note(pc->fl, 'W', "discarding over-long filter: %.*s", (int)t.len,
					    t.pat);
			continue;
		}
		if (t.flags & FR_CLEAR_LIST) {
			clear_list(pc);
			continue;
		}
		if (t.flags & FR_MERGE_FILE) {
			if (!t.len) {
				t.pat = ".cvsignore";
				t.len = 10;
			}
			if (t.flags & FR_EXCLUDE_SELF) {
				/* 'e': exclude the merge file's own name */
				const char *nm = t.pat + t.len;
				while (nm > t.pat && nm[-1] != '/')
					nm--;
				if (add_rule(pc, nm, (size_t)(t.pat + t.len - nm), 0) < 0)
					return -1;
				t.flags &= ~FR_EXCLUDE_SELF;
			}
			if (!(t.flags & FR_PERDIR_MERGE)) {
				if (merge_now(pc, &t) < 0)
					return -1;
				continue;
			}
		}
		if (add_rule(pc, t.pat, t.len, t.flags) < 0)
			return -1;
		if (t.flags & FR_CVS_IGNORE && !(t.flags & FR_MERGE_FILE) && load_cvs(pc, t.flags) < 0)
			return -1;
	}
	return rc;
}

int filter_parse_rule(struct filter_list *fl, const char *text, int flags, char *err,
		      size_t errsz)
{
	struct pctx pc = { .fl = fl, .dst = &fl->rules, .err = err, .errsz = errsz };

	fl->open_failed = 0;
	fl->err_io = false;
	pc.xflags = flags & (FILTER_PARSE_OLD_PREFIXES | FILTER_PARSE_DELETE_EXCLUDED |
			     FILTER_PARSE_FROM_PEER | FILTER_PARSE_FROM_FILE |
			     FILTER_PARSE_DIR2WILD3);
	if (err && errsz)
		*err = '\0';
	if (flags & FILTER_PARSE_FROM_PEER)
		fl->from_peer = true;
	if (flags & FILTER_PARSE_DELETE_EXCLUDED)
		fl->delete_excluded = true; /* for per-directory files, later */
	uint32_t tflags = (flags & FILTER_PARSE_INCLUDE ? FR_INCLUDE : 0) |
			  (flags & FILTER_PARSE_WORD_SPLIT ? FR_WORD_SPLIT : 0);
	return parse_str(&pc, text, tflags) < 0 ? -1 : 0;
}

int filter_parse_file(struct filter_list *fl, const char *path, int flags, char *err,
		      size_t errsz)
{
	struct pctx pc = { .fl = fl, .dst = &fl->rules, .err = err, .errsz = errsz };

	fl->open_failed = 0;
	fl->err_io = false;
	pc.xflags = flags & (FILTER_PARSE_OLD_PREFIXES | FILTER_PARSE_DIR2WILD3);
	if (err && errsz)
		*err = '\0';
	return parse_file(&pc, path, flags & FILTER_PARSE_INCLUDE ? FR_INCLUDE : 0, true) < 0 ? -1
											: 0;
}

int filter_add_cvs_rules(struct filter_list *fl, bool dir_merge, bool defaults, char *err,
			 size_t errsz)
{
	if (dir_merge && filter_parse_rule(fl, ":C", 0, err, errsz) < 0)
		return -1;
	if (defaults && filter_parse_rule(fl, "-C", 0, err, errsz) < 0)
		return -1;
	return 0;
}

int filter_list_from_opts(struct filter_list *fl, const struct ferry_opts *o, char *err,
			  size_t errsz)
{
	int flags = o->delete_excluded ? FILTER_PARSE_DELETE_EXCLUDED : 0;

	if (o->protocol)
		fl->protocol = o->protocol;
	fl->oppath_how = o->insecure_links ? OPPATH_INSECURE : 0;
	fl->confine_fd = opts_confine_fd(o);
	fl->confined_root = fl->confine_fd != -1;
	/* the client traces its own rules; a server's are not shown */
	fl->trace_level = o->debug_level[DEBUG_FILTER];
	fl->trace_who = o->server ? NULL : "client";
	/* A server's options came from the client: treat its rules so. */
	if (o->server)
		flags |= FILTER_PARSE_FROM_PEER;
	for (size_t i = 0; i < o->nfilters; i++) {
		if (filter_parse_rule(fl, o->filters[i].text,
				      flags | (o->filters[i].from_file ? FILTER_PARSE_FROM_FILE : 0),
				      err, errsz) < 0)
			return -1;
	}
	return 0;
}

/* ------------------------------------------- per-directory merge files */

static int dm_add_level(struct filter_dm *dm, int depth)
{
	if (dm->nlv == dm->lvcap) {
		size_t cap = dm->lvcap ? dm->lvcap * 2 : 8;
		struct dm_level *v = realloc(dm->lv, cap * sizeof *v);
		if (!v)
			return -1;
		dm->lv = v;
		dm->lvcap = cap;
	}
	dm->lv[dm->nlv++] = (struct dm_level){ depth, dm->rules.n, false };
	return 0;
}

/* Does dm's file name on directory dir_fs, absolute, reach rsync's
 * MAXPATHLEN (exclude.c: push_local_filters)? The path is left in
 * `path` for the message. */
static bool dm_name_too_long_at(const char *dir, const char *fname, char *path, size_t size)
{
	int n = snprintf(path, size, "%s%s%s", dir, strcmp(dir, "/") ? "/" : "", fname);
	return n < 0 || (size_t)n >= size || (size_t)n >= MAXPATHLEN_WIRE;
}

static bool dm_name_too_long(const struct pctx *pc, const struct filter_dm *dm, const char *dir_fs,
			     char *path, size_t size)
{
	char abs[PATH_MAX + 1], fdpath[64];

	/* only a long name can overflow: spare the lookup otherwise */
	if (strlen(dm->fname) + strlen(dir_fs) < MAXPATHLEN_WIRE / 2)
		return false;
	bool in_dir = pc->dir_fd >= 0 && pc->dir_fs_of_fd && strcmp(dir_fs, pc->dir_fs_of_fd) == 0;
	if (in_dir && !fs_proc_path(fdpath, sizeof fdpath, pc->dir_fd, NULL))
		in_dir = false; /* cannot happen: 64 bytes hold any fd's path */
	if (!realpath(in_dir ? fdpath : dir_fs, abs))
		snprintf(abs, sizeof abs, "%s", dir_fs);
	return dm_name_too_long_at(abs, dm->fname, path, size);
}

/* Read dm's file in directory dir_fs as a new level. */
static int dm_read(struct pctx *pc, struct filter_dm *dm, const char *dir_fs)
{
	char path[PATH_MAX + MAXPATHLEN_WIRE];

	if (dm_add_level(dm, pc->fl->depth) < 0)
		return perr(pc, "out of memory");
	if (dm_name_too_long(pc, dm, dir_fs, path, sizeof path)) {
		/* this file is skipped here, the rest goes on; the name as
		 * rsync's buffer holds it (MAXPATHLEN - 1) */
		if (dm->owner->flags & FR_FROM_FILE)
			filter_note(pc->fl, 'X', "cannot add local filter rules in long-named "
				    "directory: <rule from a file read earlier>");
		else
			filter_note(pc->fl, 'X', "cannot add local filter rules in long-named "
				    "directory: \"%.*s\"", MAXPATHLEN_WIRE - 1, path);
		return 0;
	}
	snprintf(path, sizeof path, "%s/%s", dir_fs, dm->fname);
	pc->dst = &dm->rules;
	pc->dm = dm;
	pc->dir_fs = dir_fs;
	if (dm->owner->flags & FR_FROM_FILE)
		pc->next_desc = "a file read earlier";
	bool in_dir = pc->dir_fd >= 0 && pc->dir_fs_of_fd && strcmp(dir_fs, pc->dir_fs_of_fd) == 0;
	pc->open_in_dir = in_dir;
	int rc = parse_file(pc, in_dir ? dm->fname : path, dm->owner->flags, false);
	pc->next_desc = NULL; /* not left for a later file when this one was not read */
	return rc;
}

/* exclude.c: setup_merge_file. A dir-merge name with a directory part
 * that is a parent of the first directory pushed ("/.rsync-filter" of -F,
 * "../../.rules") makes us read the file in every directory from there
 * down to that directory's parent, before the normal per-dir reads. */
static int dm_parent_scan(struct pctx *pc, struct filter_dm *dm, const char *fsdir)
{
	const char *pat = dm->owner->pattern;
	char cur[PATH_MAX + 1], dir[PATH_MAX * 2 + 2], anchor[PATH_MAX * 2 + 2];
	size_t dlen, clen;

	dm->set_up = true;
	/* a server does not look outside the transfer */
	if (!strchr(pat, '/') || pc->fl->from_peer)
		return 0;
	if (!realpath(fsdir, cur))
		return 0;
	/* the name joined to the directory's absolute path must fit rsync's
	 * MAXPATHLEN; if not, the rule keeps its whole name, which then fits
	 * no directory (exclude.c: parse_merge_name, setup_merge_file) */
	if (*pat != '/' && strlen(cur) + 1 + strlen(pat) >= MAXPATHLEN_WIRE) {
		filter_note(pc->fl, 'W', "merge-file name overflows: %s",
			    dm->owner->flags & FR_FROM_FILE ? "<rule from a file read earlier>" : pat);
		char *whole = strdup(pat);
		if (whole) {
			free(dm->fname);
			dm->fname = whole;
		}
		return 0;
	}
	if (dm->owner->flags & FR_NO_INHERIT)
		return 0;
	if (*pat == '/')
		snprintf(dir, sizeof dir, "%s", pat);
	else
		snprintf(dir, sizeof dir, "%s/%s", cur, pat);
	clean_fname(dir, CFN_COLLAPSE_DOT_DOT_DIRS); /* dir is absolute */
	*strrchr(dir, '/') = '\0'; /* the directory part */
	clen = strlen(cur);
	dlen = strlen(dir);
	if (clen + 1 >= sizeof cur)
		return 0;
	strcpy(cur + clen, clen > 1 ? "/" : "");
	clen = strlen(cur);
	if (dlen == 0 || dir[dlen - 1] != '/') {
		dir[dlen++] = '/';
		dir[dlen] = '\0';
	}
	if (strncmp(dir, cur, dlen) != 0 || dlen == clen)
		return 0; /* not a parent of the transfer: nothing to scan */
	pc->anchor_abs = true;
	while (dlen < clen) {
		/* "/x/" -> anchored rules become "/x/..." with FR_ABS_PATH */
		snprintf(anchor, sizeof anchor, "%.*s", (int)(dlen - 1), dir);
		pc->anchor = anchor;
		if (dm_read(pc, dm, dlen > 1 ? anchor : "/") < 0)
			return -1;
		while (cur[dlen] != '/')
			dlen++;
		memcpy(dir, cur, ++dlen);
		dir[dlen] = '\0';
	}
	pc->anchor_abs = false;
	return 0;
}

/* The transfer root's absolute path: fsdir less relpath's components. */
static void derive_abs_root(struct filter_list *fl, const char *fsdir, const char *rel)
{
	char buf[PATH_MAX + 1];

	if (!realpath(fsdir, buf))
		return;
	for (const char *p = rel; *p; p++) {
		if (*p != '/' && (p == rel || p[-1] == '/')) {
			char *s = strrchr(buf, '/');
			if (s && s != buf)
				*s = '\0';
			else
				strcpy(buf, "/");
		}
	}
	free(fl->abs_root);
	fl->abs_root = strdup(buf);
}

int filter_set_abs_root(struct filter_list *fl, const char *abs_dir)
{
	char *s = strdup(abs_dir);

	if (!s)
		return -1;
	free(fl->abs_root);
	fl->abs_root = s;
	fl->abs_root_fixed = true;
	return 0;
}

int filter_push_dir(struct filter_list *fl, const char *fsdir, const char *relpath,
		    char *err, size_t errsz)
{
	return filter_push_dir_at(fl, -1, fsdir, relpath, err, errsz);
}

int filter_push_dir_at(struct filter_list *fl, int dirfd, const char *fsdir, const char *relpath,
		       char *err, size_t errsz)
{
	char rel[MAXPATHLEN_WIRE + 2], anchor[MAXPATHLEN_WIRE + 4];
	struct pctx pc = { .fl = fl, .err = err, .errsz = errsz, .dir_fd = dirfd,
			   .dir_fs_of_fd = fsdir };
	size_t n;

	while (relpath[0] == '.' && relpath[1] == '/')
		relpath += 2;
	relpath += strspn(relpath, "/");
	if (!strcmp(relpath, "."))
		relpath = "";
	n = strlen(relpath);
	while (n && relpath[n - 1] == '/')
		n--;
	fl->err_io = fl->err_soft = false;
	if (n >= sizeof rel - 1) {
		fl->err_soft = true;
		return perr(&pc, "directory name too long: %s", relpath);
	}
	memcpy(rel, relpath, n);
	rel[n] = '\0';
	snprintf(anchor, sizeof anchor, "%s%s", n ? "/" : "", rel);
	if (err && errsz)
		*err = '\0';
	fl->depth++;
	/* only rules read the root's name; realpath() of a /proc/self/fd
	 * name costs a dozen readlinks, and the walker pushes every
	 * directory at depth 1 */
	if (fl->depth == 1 && !fl->abs_root_fixed &&
	    (fl->rules.n || fl->cvs.n || fl->ndms))
		derive_abs_root(fl, fsdir, rel);
	pc.xflags = X_PERDIR | (fl->delete_excluded ? FILTER_PARSE_DELETE_EXCLUDED : 0);
	/* fl->ndms can grow while we go: a file may add dir-merge rules, and
	 * those are read in this same directory too (as rsync does). */
	for (size_t i = 0; i < fl->ndms; i++) {
		struct filter_dm *dm = fl->dms[i];
		int rc = dm->set_up ? 0 : dm_parent_scan(&pc, dm, fsdir);
		pc.anchor = anchor;
		pc.anchor_abs = false;
		if (rc < 0 || dm_read(&pc, dm, fsdir) < 0) {
			filter_pop_dir(fl);
			return -1;
		}
	}
	return 0;
}

void filter_pop_dir(struct filter_list *fl)
{
	if (fl->depth <= 0)
		return;
	/* Newest first: freeing a level may free dir-merge rules it held,
	 * and those were registered after the dir-merge that read them. */
	for (size_t i = fl->ndms; i-- > 0;) {
		if (i >= fl->ndms)
			continue;
		struct filter_dm *dm = fl->dms[i];
		while (dm->nlv && dm->lv[dm->nlv - 1].depth >= fl->depth) {
			rules_truncate(fl, &dm->rules, dm->lv[dm->nlv - 1].start);
			dm->nlv--;
		}
	}
	fl->depth--;
}
