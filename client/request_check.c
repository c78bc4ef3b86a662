/*
 * The receiving client's check of the sender's names (see request_check.h).
 */
#include "client/request_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "proto/args/options.h"
#include "proto/args/remote.h"
#include "proto/core/flist.h"
#include "proto/core/session.h"
#include "proto/base/wire.h"

/* What one argument contributes, as rsync's add_implied_include() builds
 * it: the argument's own name (anchored, "/"-prefixed, cleaned of "//",
 * "./" and a trailing "/") and, with -r or -d, everything below it. */
struct implied_pat {
	char pat[2 * MAXPATHLEN_WIRE + 8];
	size_t len;
	int backslashes; /* not escaping a wildcard character */
	bool wild;       /* the argument had '*', '[' or '?' */
	bool open_bracket; /* ... a '[' that starts a character class */
};

static bool add_rule(struct request_check *rq, const char *pat, bool dir_only, char *err,
		     size_t errsz)
{
	char text[4 * MAXPATHLEN_WIRE + 32];

	if (strlen(pat) + 4 > sizeof text)
		return snprintf(err, errsz, "source argument too long: %.100s...", pat) < 0;
	snprintf(text, sizeof text, "+ %s%s", pat, dir_only ? "/" : "");
	return filter_parse_rule(dir_only ? &rq->implied_parents : &rq->implied, text, 0, err,
				 errsz) == 0;
}

/* A pattern whose '[' may have been meant literally (the remote shell
 * found no match and passed it on): the same rule with each unescaped
 * '[' escaped (exclude.c: maybe_add_literal_brackets_rule). */
static bool add_literal_brackets(struct request_check *rq, const char *pat, bool dir_only,
				 char *err, size_t errsz)
{
	char out[sizeof ((struct implied_pat *)0)->pat * 2];
	size_t n = 0;

	if (!strchr(pat, '['))
		return true;
	for (const char *cp = pat; *cp && n + 3 < sizeof out;) {
		if (*cp == '\\' && cp[1]) {
			out[n++] = *cp++;
		} else if (*cp == '[') {
			out[n++] = '\\';
		}
		out[n++] = *cp++;
	}
	out[n] = '\0';
	return add_rule(rq, out, dir_only, err, errsz);
}

/* The argument's own pattern, character by character as rsync does. */
static void clean_arg(struct implied_pat *ip, const char *arg)
{
	char *p = ip->pat;
	const char *cp = arg;

	ip->wild = strpbrk(arg, "*[?") != NULL;
	*p++ = '/';
	while (*cp && p < ip->pat + sizeof ip->pat - 3) {
		switch (*cp) {
		case '\\':
			if (cp[1] == ']') {
				if (!ip->wild)
					cp++; /* a "\]" means nothing in a literal name */
			} else if (!cp[1] || !strchr("*[?", cp[1])) {
				ip->backslashes++;
				if (ip->wild)
					*p++ = '\\';
			}
			*p++ = *cp++;
			break;
		case '/':
			if (p[-1] == '/') {
				if (*++cp == '\0')
					p--; /* "//" at the end */
			} else if (cp[1] == '\0') {
				cp++; /* a trailing slash */
			} else {
				*p++ = *cp++;
			}
			break;
		case '.':
			if (p[-1] == '/' && cp[1] == '/') {
				cp += 2; /* "./" */
				if (!*cp)
					p--;
			} else if (p[-1] == '/' && cp[1] == '\0') {
				cp++; /* a final "." */
				p--;
			} else {
				*p++ = *cp++;
			}
			break;
		case '[':
			ip->open_bracket = true;
			*p++ = *cp++;
			break;
		default:
			*p++ = *cp++;
			break;
		}
	}
	*p = '\0';
	ip->len = (size_t)(p - ip->pat);
}

/* -R: each parent directory of the argument is listed too (as an
 * implied directory), so each gets a directory-only rule. */
static bool add_parents(struct request_check *rq, const struct implied_pat *ip, char *err,
			size_t errsz)
{
	char parent[sizeof ip->pat];

	memcpy(parent, ip->pat, ip->len + 1);
	for (char *slash; (slash = strrchr(parent, '/')) != NULL && slash != parent;) {
		*slash = '\0';
		if (!add_rule(rq, parent, true, err, errsz) ||
		    (ip->open_bracket && !add_literal_brackets(rq, parent, true, err, errsz)))
			return false;
	}
	return true;
}

/* The rule for the argument's contents: "/ARG/" then "**" with -r, "*"
 * with -d; a literal name's backslashes are escaped now that it is a
 * pattern. */
static bool add_contents(struct request_check *rq, const struct implied_pat *ip, bool recurse,
			 char *err, size_t errsz)
{
	char pat[sizeof ip->pat * 2 + 4];
	size_t n = 0;

	for (size_t i = 0; i < ip->len && n + 6 < sizeof pat; i++) {
		if (ip->pat[i] == '\\' && !ip->wild && ip->backslashes)
			pat[n++] = '\\';
		pat[n++] = ip->pat[i];
	}
	snprintf(pat + n, sizeof pat - n, "/*%s", recurse ? "*" : "");
	if (ip->len == 0)
		rq->root_content = true;
	if (ip->len == 0 && recurse)
		rq->whole_tree = true;
	return add_rule(rq, pat, false, err, errsz) &&
	       (!ip->open_bracket || add_literal_brackets(rq, pat, false, err, errsz));
}

/* mirrors rsync exclude.c: add_implied_include() for one argument, the
 * module name already taken off a daemon path */
static bool add_implied(struct request_check *rq, const struct ferry_opts *o, const char *arg,
			char *err, size_t errsz)
{
	struct implied_pat ip = {.len = 0};
	const char *cp;

	if (o->relative) {
		if ((cp = strstr(arg, "/./")) != NULL)
			arg = cp + 3;
	} else if ((cp = strrchr(arg, '/')) != NULL) {
		arg = cp + 1;
	}
	if (strcmp(arg, ".") == 0)
		arg = "";
	if (*arg) {
		clean_arg(&ip, arg);
		if (ip.len == 1)
			ip.len = 0; /* nothing but "/" was left */
		ip.pat[ip.len] = '\0';
	}
	if (ip.len) {
		if (!add_rule(rq, ip.pat, false, err, errsz) ||
		    (ip.open_bracket && !add_literal_brackets(rq, ip.pat, false, err, errsz)))
			return false;
		if (o->relative && !add_parents(rq, &ip, err, errsz))
			return false;
	}
	if (o->recursive || o->dirs)
		return add_contents(rq, &ip, o->recursive, err, errsz);
	return true;
}

/* rsync's trust_sender_filter: a dir-merge rule means the sender's own
 * per-directory files filter the list, which we cannot judge. */
bool request_check_init(struct request_check *rq, const struct ferry_opts *o,
			const struct remote_spec *srcs, int nsrc, const struct filter_list *filters,
			char *err, size_t errsz)
{
	memset(rq, 0, sizeof *rq);
	filter_list_init(&rq->implied);
	filter_list_init(&rq->implied_parents);
	if (o->trust_sender)
		return true;
	rq->filters = filters;
	rq->check_filters = filters && filter_list_count(filters) > 0 && !filter_list_has_dir_merge(filters) &&
			    !o->cvs_exclude;
	/* options.c: old-style args and --files-from names are the sender's
	 * to expand (io.c adds a local list's names one by one; ferry trusts
	 * the list instead) */
	if (o->old_args > 0 || o->files_from)
		return true;
	rq->check_names = true;
	for (int i = 0; i < nsrc; i++) {
		const char *arg = srcs[i].path[0] ? srcs[i].path : ".";
		if (srcs[i].kind == REMOTE_DAEMON)
			arg = srcs[i].path; /* "module/path" minus the module */
		if (!add_implied(rq, o, arg, err, errsz))
			return false;
	}
	return true;
}

void request_check_free(struct request_check *rq)
{
	filter_list_free(&rq->implied);
	filter_list_free(&rq->implied_parents);
}

static bool is_root_name(const char *name)
{
	return strcmp(name, ".") == 0 || strcmp(name, "/.") == 0;
}

/* Asked for only as the parent of something (exclude.c:
 * is_implied_parent_dir); "." unless its contents were asked for. */
static bool only_a_parent(const struct request_check *rq, const char *path, bool root)
{
	if (root)
		return !rq->root_content;
	if (rq->whole_tree)
		return false;
	return filter_check(&rq->implied, path, true, false) <= 0 &&
	       filter_check(&rq->implied_parents, path, true, false) > 0;
}

/* A sender may not widen --delete's reach by calling a parent a content
 * directory: it becomes the implied directory it is. */
static void downgrade_parent(const struct request_check *rq, struct file_entry *f,
			     const char *path, bool root)
{
	if (S_ISDIR(f->mode) && (f->flags & (FE_CONTENT_DIR | FE_TOP_DIR)) &&
	    only_a_parent(rq, path, root)) {
		f->flags &= ~(FE_CONTENT_DIR | FE_TOP_DIR);
		f->flags |= FE_IMPLIED_DIR;
	}
}

bool request_check_list(struct session *s, const struct request_check *rq, struct flist *fl)
{
	return request_check_range(s, rq, fl, 0, fl->count);
}

bool request_check_range(struct session *s, const struct request_check *rq, struct flist *fl,
			 size_t first, size_t end)
{
	char path[MAXPATHLEN_WIRE * 2];

	if (!rq || (!rq->check_names && !rq->check_filters))
		return true;
	for (size_t i = first; i < end; i++) {
		struct file_entry *f = &fl->files[i];
		if (!flist_path(f, path, sizeof path))
			continue;
		bool root = is_root_name(path);
		if (rq->check_names)
			downgrade_parent(rq, f, path, root);
		if (root)
			continue;
		bool is_dir = S_ISDIR(f->mode);
		if (rq->check_filters && filter_check(rq->filters, path, is_dir, false) < 0)
			return wire_fail(&s->err, RERR_UNSUPPORTED,
					 "ERROR: rejecting excluded file-list name: %s", path);
		if (rq->check_names && !rq->whole_tree &&
		    filter_check(&rq->implied, path, is_dir, false) <= 0 &&
		    filter_check(&rq->implied_parents, path, is_dir, false) <= 0)
			return wire_fail(&s->err, RERR_UNSUPPORTED,
					 "ERROR: rejecting unrequested file-list name: %s", path);
	}
	return true;
}
