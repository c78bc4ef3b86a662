/*
 * Mapping the sender's user and group ids to ours by name, as rsync's
 * uidlist.c does: user names only when we run as root, group names always;
 * an unknown name keeps the numeric id.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/base/alloc.h"
#include "proto/base/fdio.h"
#include "proto/base/fileio.h"
#include "proto/core/session.h"
#include "proto/base/wildmatch.h"

#define NAMECVT_LINE_MAX 1024 /* one request or answer, as rsync's buffer */

/* Names the converter may be asked about: no control characters, which
 * would break its line protocol (clientserver.c: namecvt_safe_token). */
static bool namecvt_safe(const char *name)
{
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (*p < ' ' || *p == 0x7f)
			return false;
	return true;
}

/* One exchange with the name converter: "CMD ARG\n" out, one line back
 * into ans (without its newline). False when it is gone or the answer
 * does not fit. mirrors rsync clientserver.c:namecvt_call() */
static bool namecvt_ask(struct session *s, const char *cmd, const char *arg, char *ans,
			size_t size)
{
	char req[NAMECVT_LINE_MAX];
	int len = snprintf(req, sizeof req, "%s %s\n", cmd, arg);

	if (len < 0 || (size_t)len >= sizeof req)
		return false;
	if (!fd_write_all(s->namecvt_req_fd, req, (size_t)len)) {
		session_err(s, "Connection to name-converter failed.");
		return false;
	}
	size_t n = 0;
	for (;;) {
		char ch;
		ssize_t r = read(s->namecvt_ans_fd, &ch, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		if (ch == '\n')
			break;
		if (n + 1 >= size)
			return false;
		ans[n++] = ch;
	}
	if (n && ans[n - 1] == '\r')
		n--;
	ans[n] = '\0';
	return true;
}

/* "usr NAME" / "grp NAME": an empty or non-numeric answer means unknown
 * (never 0, which would make an unknown name root). */
static bool namecvt_to_id(struct session *s, const char *name, bool is_user, uint32_t *out)
{
	char ans[NAMECVT_LINE_MAX];

	if (!namecvt_safe(name)) {
		session_err(s, "invalid name-converter token: %s", name);
		return false;
	}
	if (!namecvt_ask(s, is_user ? "usr" : "grp", name, ans, sizeof ans) || !*ans ||
	    strspn(ans, "0123456789") != strlen(ans) || strlen(ans) > 10)
		return false;
	unsigned long long v = strtoull(ans, NULL, 10);
	if (v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* The passwd and group files through the re-entrant calls: getpwuid()
 * and friends return one static result per process, which another
 * session's thread (or the other half of an in-process local copy) may
 * overwrite while this one reads it. The record's strings live in *buf,
 * grown on ERANGE up to 1 MiB; the caller frees it. name non-NULL: look
 * it up, else id. */
static struct passwd *user_entry(const char *name, uid_t id, struct passwd *pw, char **buf)
{
	struct passwd *res = NULL;

	for (size_t sz = 4096; sz <= (1u << 20); sz *= 2) {
		char *nb = realloc(*buf, sz);
		if (!nb)
			return NULL;
		*buf = nb;
		int rc = name ? getpwnam_r(name, pw, *buf, sz, &res)
			      : getpwuid_r(id, pw, *buf, sz, &res);
		if (rc != ERANGE)
			return rc == 0 ? res : NULL;
	}
	return NULL;
}

/* As user_entry, for the group file. */
static struct group *group_entry(const char *name, gid_t id, struct group *gr, char **buf)
{
	struct group *res = NULL;

	for (size_t sz = 4096; sz <= (1u << 20); sz *= 2) {
		char *nb = realloc(*buf, sz);
		if (!nb)
			return NULL;
		*buf = nb;
		int rc = name ? getgrnam_r(name, gr, *buf, sz, &res)
			      : getgrgid_r(id, gr, *buf, sz, &res);
		if (rc != ERANGE)
			return rc == 0 ? res : NULL;
	}
	return NULL;
}

const char *id_local_name(struct session *s, bool is_user, uint32_t id, char *buf,
			  size_t size)
{
	if (s->namecvt_req_fd >= 0) {
		char num[16];
		snprintf(num, sizeof num, "%u", id);
		if (!namecvt_ask(s, is_user ? "uid" : "gid", num, buf, size) || !*buf)
			return NULL;
		return buf;
	}
	const char *name = NULL;
	char *rec = NULL;
	struct passwd pwd, *pw;
	struct group grp, *gr;
	if (is_user) {
		pw = user_entry(NULL, (uid_t)id, &pwd, &rec);
		name = pw ? pw->pw_name : NULL;
	} else {
		gr = group_entry(NULL, (gid_t)id, &grp, &rec);
		name = gr ? gr->gr_name : NULL;
	}
	if (name)
		snprintf(buf, size, "%s", name);
	free(rec);
	return name ? buf : NULL;
}

static bool lookup_local(struct session *s, const char *name, bool is_user, uint32_t *out)
{
	if (s->namecvt_req_fd >= 0)
		return namecvt_to_id(s, name, is_user, out);
	char *rec = NULL;
	bool found;
	if (is_user) {
		struct passwd pwd, *pw = user_entry(name, 0, &pwd, &rec);
		found = pw != NULL;
		if (found)
			*out = (uint32_t)pw->pw_uid;
	} else {
		struct group grp, *gr = group_entry(name, 0, &grp, &rec);
		found = gr != NULL;
		if (found)
			*out = (uint32_t)gr->gr_gid;
	}
	free(rec);
	return found;
}

/* The first rule matching the sender's id (and name, "" when unknown). */
static const struct id_rule *match_rule(const struct id_map *map, uint32_t id, const char *name)
{
	for (size_t i = 0; i < map->nrules; i++) {
		const struct id_rule *r = &map->rules[i];
		if (r->pattern ? wildmatch(r->pattern, name ? name : "")
			       : id >= r->lo && id <= r->hi)
			return r;
	}
	return NULL;
}

static void id_maps_free(struct session *s);

static bool remember(struct session *s, struct id_map *map, uint32_t id, uint32_t local)
{
	for (size_t i = 0; i < map->count; i++) {
		if (map->from[i] == id) {
			map->to[i] = local;
			return true;
		}
	}
	if (map->count == map->cap) {
		size_t cap = map->cap ? map->cap * 2 : 32;
		session_on_free(s, id_maps_free);
		uint32_t *from = xrealloc_array(&s->err, map->from, cap, sizeof *from);
		if (!from)
			return false;
		map->from = from;
		uint32_t *to = xrealloc_array(&s->err, map->to, cap, sizeof *to);
		if (!to)
			return false;
		map->to = to;
		map->cap = cap;
	}
	map->from[map->count] = id;
	map->to[map->count] = local;
	map->count++;
	return true;
}

bool id_map_add(struct session *s, struct id_map *map, uint32_t id, const char *name,
		bool is_user)
{
	const struct id_rule *r = match_rule(map, id, name);
	uint32_t local;

	if (r)
		return remember(s, map, id, r->to);
	if (!lookup_local(s, name, is_user, &local))
		return true;
	return remember(s, map, id, local);
}

static uint32_t map_id(const struct id_map *map, uint32_t id, bool numeric)
{
	for (size_t i = 0; i < map->count; i++)
		if (map->from[i] == id)
			return map->to[i];
	/* an id the sender named no name for: only the rules can map it
	 * (id 0 is taken to be "root", as rsync does) */
	const struct id_rule *r = match_rule(map, id, id == 0 && !numeric ? "root" : NULL);
	return r ? r->to : id;
}

/* Can we (not root) give a file this group? Only one of ours. */
static bool in_our_groups(uint32_t gid)
{
	gid_t groups[256];
	int n = getgroups(256, groups);

	if ((gid_t)gid == getegid())
		return true;
	for (int i = 0; i < n; i++)
		if (groups[i] == (gid_t)gid)
			return true;
	return false;
}

void id_map_apply(struct session *s, struct file_entry *f)
{
	const struct ferry_opts *o = s->opts;

	bool numeric = o->numeric_ids || s->module.ids_by_number;
	if (!numeric || s->uids.nrules) {
		if (o->owner && s->am_root)
			fe_set_uid(f, map_id(&s->uids, fe_uid(f), numeric));
	}
	if (!numeric || s->gids.nrules) {
		if (o->group)
			fe_set_gid(f, map_id(&s->gids, fe_gid(f), numeric));
	}
	/* uidlist.c: match_gid sets FLAG_SKIP_GROUP for a group a non-root
	 * receiver cannot set, so it is neither changed nor reported. */
	if (o->group && !s->am_root && !in_our_groups(fe_gid(f)))
		f->flags |= FE_SKIP_GROUP;
}

static bool parse_rule(struct session *s, char *item, bool users, struct id_rule *r)
{
	const char *what = users ? "user" : "group";
	char *colon = strchr(item, ':');
	uint32_t to;

	if (!colon)
		return wire_fail(&s->err, RERR_SYNTAX, "No colon found in --%smap: %s", what, item);
	if (!colon[1])
		return wire_fail(&s->err, RERR_SYNTAX, "No name found after colon --%smap: %s",
				 what, item);
	*colon = '\0';
	memset(r, 0, sizeof *r);
	if (isdigit((unsigned char)*item)) {
		char *dash = strchr(item, '-'), *end;
		if (strspn(item, "0123456789-") != strlen(item) ||
		    (dash && (!dash[1] || strchr(dash + 1, '-'))))
			return wire_fail(&s->err, RERR_SYNTAX, "Invalid number in --%smap: %s", what,
					 item);
		r->lo = r->hi = (uint32_t)strtoul(item, &end, 10);
		if (dash)
			r->hi = (uint32_t)strtoul(dash + 1, &end, 10);
	} else if (!(r->pattern = strdup(item))) {
		return wire_fail(&s->err, RERR_MALLOC, "out of memory");
	}
	const char *name = colon + 1;
	char *end;
	unsigned long n = strtoul(name, &end, 10);
	if (isdigit((unsigned char)*name) && !*end)
		to = (uint32_t)n;
	else if (!lookup_local(s, name, users, &to)) {
		/* rsync reports it and leaves the rule out */
		session_err(s, "Unknown --%smap name on receiver: %s", what, name);
		free(r->pattern);
		r->pattern = NULL;
		return false;
	}
	r->to = to;
	return true;
}

bool id_rules_parse(struct session *s, struct id_map *map, const char *spec, bool users)
{
	char *copy = strdup(spec), *save = NULL;

	if (!copy)
		return wire_fail(&s->err, RERR_MALLOC, "out of memory");
	map->rules_parsed = true;
	session_on_free(s, id_maps_free);
	for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		struct id_rule *rules = realloc(map->rules, (map->nrules + 1) * sizeof *rules);
		if (!rules) {
			free(copy);
			return wire_fail(&s->err, RERR_MALLOC, "out of memory");
		}
		map->rules = rules;
		if (parse_rule(s, item, users, &rules[map->nrules]))
			map->nrules++;
		else if (wire_error_code(&s->err)) {
			free(copy);
			return false;
		}
	}
	free(copy);
	return true;
}

static void id_map_free(struct id_map *map)
{
	free(map->from);
	free(map->to);
	for (size_t i = 0; i < map->nrules; i++)
		free(map->rules[i].pattern);
	free(map->rules);
	memset(map, 0, sizeof *map);
}

/* The session's clean-up for its two maps (session_on_free). */
static void id_maps_free(struct session *s)
{
	id_map_free(&s->uids);
	id_map_free(&s->gids);
}
