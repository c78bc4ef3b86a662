/*
 * Filter rules: matching a name against a list (exclude.c: rule_matches,
 * check_filter), the dir-merge rules of the open directories first.
 */

#include "proto/filter/filter.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>


#include "proto/filter/filter_priv.h"
#include "proto/core/flist.h"
#include "proto/base/wildmatch.h"

/* Does a rule with flags f count on this side? A rule for one side only
 * is that side's (exclude.c: send_rules marks the rest as elided). */
static bool side_applies(uint32_t f, bool receiver)
{
	if (receiver)
		return !(f & FR_SENDER_SIDE) || f & FR_RECEIVER_SIDE;
	return !(f & FR_RECEIVER_SIDE) || f & FR_SENDER_SIDE;
}

/* exclude.c: rule_matches. rsync matches against a virtual join of up
 * to four strings; we build the joined text. */
static bool rule_matches(const struct filter_list *fl, const struct filter_rule *r,
			 const char *fname, bool is_dir)
{
	bool hit = !(r->flags & FR_NEGATE), m;
	const char *name = fname + (*fname == '/'), *pat = r->pattern;
	const char *pre = "", *sep = "", *tail = "", *p;
	char sbuf[2 * MAXPATHLEN_WIRE + 8], *text = sbuf;
	int where;

	if (!*name || r->flags & FR_XATTR)
		return false;
	if (!r->slash_cnt && !(r->flags & FR_WILD2)) {
		/* no slash and no "**": just the last component */
		if ((p = strrchr(name, '/')) != NULL)
			name = p + 1;
	} else if (r->flags & FR_ABS_PATH && *fname != '/' && fl->abs_root && fl->abs_root[1]) {
		pre = fl->abs_root + 1;
		sep = "/";
	} else if (r->flags & FR_WILD2_PREFIX && *fname != '/') {
		sep = "/"; /* so "**" + "/" matches at the start */
	}
	if (is_dir) {
		if (r->flags & FR_WILD3_SUFFIX)
			tail = "/"; /* a trailing "***" matches the dir itself */
	} else if (r->flags & FR_DIRECTORY) {
		return !hit;
	}
	bool anchored = *pat == '/';
	if (anchored)
		pat++;
	if (!anchored && r->slash_cnt && !(r->flags & FR_WILD2))
		where = (int)r->slash_cnt + 1; /* the last slash_cnt+1 elements */
	else if (!anchored && !(r->flags & FR_WILD2_PREFIX) && r->flags & FR_WILD2)
		where = -1; /* at the start or after any slash */
	else
		where = 0;
	size_t need = strlen(pre) + strlen(sep) + strlen(name) + strlen(tail) + 1;
	if (need > sizeof sbuf && !(text = malloc(need)))
		return false;
	snprintf(text, need, "%s%s%s%s", pre, sep, name, tail);
	m = r->flags & FR_WILD ? wildmatch_where(pat, text, where) : litmatch_where(pat, text, where);
	if (text != sbuf)
		free(text);
	return m ? hit : !hit;
}

static int check_rules(const struct filter_list *fl, const struct filter_rules *rs,
		       size_t from, size_t to, const char *path, int cflags, const char *type);

/* A dir-merge rule's rules: this directory's first, then inherited ones. */
static int check_dm(const struct filter_list *fl, const struct filter_dm *dm,
		    const char *path, int cflags)
{
	char type[PATH_MAX + 16];

	snprintf(type, sizeof type, " [per-dir %s]",
		 dm->owner->flags & FR_FROM_FILE ? "<rule from a file read earlier>" : dm->fname);
	for (size_t k = dm->nlv; k-- > 0;) {
		size_t end = k + 1 < dm->nlv ? dm->lv[k + 1].start : dm->rules.n;
		int rc = check_rules(fl, &dm->rules, dm->lv[k].start, end, path, cflags, type);
		if (rc)
			return rc;
		if (dm->lv[k].cut || dm->owner->flags & FR_NO_INHERIT)
			break;
	}
	return 0;
}

/* -vv's line for a match (exclude.c: report_filter_result): the sender
 * hides or shows, the generator protects or risks; a rule read from a
 * file is not quoted. type names the list ("", " [global CVS]", ...). */
static void report_match(const struct filter_list *fl, const struct filter_rule *r,
			 const char *path, int cflags, const char *type)
{
	bool gen = cflags & FILTER_CHECK_RECEIVER, incl = r->flags & FR_INCLUDE;
	bool hidden = r->flags & FR_FROM_FILE;
	char line[2 * PATH_MAX + 128];

	snprintf(line, sizeof line, "[%s] %s %s %s because of pattern %s%s%s\n",
		 gen ? "generator" : "sender",
		 gen ? (incl ? "risking" : "protecting") : (incl ? "showing" : "hiding"),
		 cflags & FILTER_CHECK_DIR ? "directory" : "file", path,
		 hidden ? "<rule from a file read earlier>" : r->pattern,
		 !hidden && r->flags & FR_DIRECTORY ? "/" : "", type);
	fl->report(fl->report_ctx, line);
}

/* exclude.c: check_filter */
static int check_rules(const struct filter_list *fl, const struct filter_rules *rs,
		       size_t from, size_t to, const char *path, int cflags, const char *type)
{
	bool is_dir = cflags & FILTER_CHECK_DIR, recv = cflags & FILTER_CHECK_RECEIVER;

	for (size_t i = from; i < to; i++) {
		const struct filter_rule *r = rs->v[i];
		int rc;
		if (cflags & FILTER_CHECK_IGNORE_PERISHABLE && r->flags & FR_PERISHABLE)
			continue;
		if (r->flags & FR_PERDIR_MERGE) {
			if (r->dm && (rc = check_dm(fl, r->dm, path, cflags)) != 0)
				return rc;
			continue;
		}
		if (r->flags & FR_CVS_IGNORE) {
			if ((rc = check_rules(fl, &fl->cvs, 0, fl->cvs.n, path, cflags,
					      " [global CVS]")) != 0)
				return rc;
			continue;
		}
		if (side_applies(r->flags, recv) && rule_matches(fl, r, path, is_dir)) {
			if (fl->report)
				report_match(fl, r, path, cflags, type);
			return r->flags & FR_INCLUDE ? 1 : -1;
		}
	}
	return 0;
}

int filter_check_flags(const struct filter_list *fl, const char *path, int cflags)
{
	if (!fl || !path)
		return 0;
	return check_rules(fl, &fl->rules, 0, fl->rules.n, path, cflags, "");
}

int filter_check(const struct filter_list *fl, const char *path, bool is_dir,
		 bool receiver_side)
{
	return filter_check_flags(fl, path, (is_dir ? FILTER_CHECK_DIR : 0) |
					    (receiver_side ? FILTER_CHECK_RECEIVER : 0));
}
