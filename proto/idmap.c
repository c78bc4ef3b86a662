/*
 * Mapping the sender's user and group ids to ours by name, as rsync's
 * uidlist.c does: user names only when we run as root, group names always;
 * an unknown name keeps the numeric id.
 */
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/session.h"

static bool lookup_local(const char *name, bool is_user, uint32_t *out)
{
	if (is_user) {
		struct passwd *pw = getpwnam(name);
		if (!pw)
			return false;
		*out = (uint32_t)pw->pw_uid;
	} else {
		struct group *gr = getgrnam(name);
		if (!gr)
			return false;
		*out = (uint32_t)gr->gr_gid;
	}
	return true;
}

bool id_map_add(struct session *s, struct id_map *map, uint32_t id, const char *name,
		bool is_user)
{
	uint32_t local;

	if (!lookup_local(name, is_user, &local))
		return true;
	for (size_t i = 0; i < map->count; i++) {
		if (map->from[i] == id) {
			map->to[i] = local;
			return true;
		}
	}
	if (map->count == map->cap) {
		size_t cap = map->cap ? map->cap * 2 : 32;
		uint32_t *from = realloc(map->from, cap * sizeof *from);
		if (!from)
			return wire_fail(&s->err, RERR_MALLOC, "out of memory");
		map->from = from;
		uint32_t *to = realloc(map->to, cap * sizeof *to);
		if (!to)
			return wire_fail(&s->err, RERR_MALLOC, "out of memory");
		map->to = to;
		map->cap = cap;
	}
	map->from[map->count] = id;
	map->to[map->count] = local;
	map->count++;
	return true;
}

static uint32_t map_id(const struct id_map *map, uint32_t id)
{
	for (size_t i = 0; i < map->count; i++)
		if (map->from[i] == id)
			return map->to[i];
	return id;
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

	if (!o->numeric_ids && !s->ids_by_number) {
		if (o->owner && s->am_root)
			f->uid = map_id(&s->uids, f->uid);
		if (o->group)
			f->gid = map_id(&s->gids, f->gid);
	}
	/* uidlist.c: match_gid sets FLAG_SKIP_GROUP for a group a non-root
	 * receiver cannot set, so it is neither changed nor reported. */
	if (o->group && !s->am_root && !in_our_groups(f->gid))
		f->flags |= FE_SKIP_GROUP;
}
