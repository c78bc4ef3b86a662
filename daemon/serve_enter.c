/*
 * Entering the module: the daemon's and the module's chroot, user and
 * groups (clientserver.c: rsync_module, start_daemon).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/log.h"
#include "daemon/serve_priv.h"
#include "proto/base/oppath.h"

static bool name_to_id(const char *name, bool is_group, unsigned *id)
{
	char *end;
	unsigned long v = strtoul(name, &end, 10);

	if (*name && !*end && v <= 0xffffffffUL) {
		*id = (unsigned)v;
		return true;
	}
	if (is_group) {
		struct group *gr = getgrnam(name);
		if (gr)
			*id = gr->gr_gid;
		return gr != NULL;
	}
	struct passwd *pw = getpwnam(name);
	if (pw)
		*id = pw->pw_uid;
	return pw != NULL;
}

/* Groups a module's `gid` may name; "*" past this many fails as rsync's
 * getgrouplist() failure does. */
#define MODULE_GROUPS_MAX 1024

/* Whom a root daemon becomes for a module: the uid, and the groups, the
 * first being the primary one. */
struct module_ids {
	uid_t uid;
	gid_t gids[MODULE_GROUPS_MAX];
	int ngids;
};

static bool bad_id(struct conn *c, const char *what, const char *name)
{
	daemon_log(c->cfg, c->m, "Invalid %s %s", what, name);
	send_line(c, "@ERROR: invalid %s %s\n", what, name);
	return false;
}

static bool add_group(struct conn *c, struct module_ids *ids, const char *name)
{
	unsigned id;

	if (!name_to_id(name, true, &id) || ids->ngids >= MODULE_GROUPS_MAX)
		return bad_id(c, "gid", name);
	ids->gids[ids->ngids++] = id;
	return true;
}

/* "gid = *": every group of the module's user, its primary group first
 * (uidlist.c: getallgroups). */
static bool add_all_groups(struct conn *c, struct module_ids *ids)
{
	struct passwd *pw = getpwuid(ids->uid);
	int n = MODULE_GROUPS_MAX;
	const char *err = NULL;

	if (!pw)
		err = "getpwuid failed";
	else if (getgrouplist(pw->pw_name, pw->pw_gid, ids->gids, &n) < 0)
		err = "getgrouplist failed";
	if (err) {
		daemon_log(c->cfg, c->m, "%s", err);
		send_line(c, "@ERROR: %s\n", err);
		return false;
	}
	ids->ngids = n;
	for (int j = 1; j < n; j++) {
		if (ids->gids[j] == pw->pw_gid) {
			ids->gids[j] = ids->gids[0];
			ids->gids[0] = pw->pw_gid;
			break;
		}
	}
	return true;
}

/* The module's `gid` list ("*" only first), or nogroup (nobody where there
 * is no nogroup) when it has none (clientserver.c: rsync_module). */
static bool lookup_groups(struct conn *c, const struct daemon_module *m,
			  struct module_ids *ids)
{
	if (!m->gid || !*m->gid) {
		unsigned id;
		if (!name_to_id("nogroup", true, &id) && !name_to_id("nobody", true, &id))
			return bad_id(c, "gid", "nogroup");
		ids->gids[ids->ngids++] = id;
		return true;
	}
	char *list = strdup(m->gid);
	struct rule_iter it;
	bool ok = list != NULL;

	if (list)
		rules_begin(&it, list);
	for (char *tok; ok && (tok = rules_next(&it)) != NULL;) {
		if (ids->ngids == 0 && strcmp(tok, "*") == 0)
			ok = add_all_groups(c, ids);
		else
			ok = add_group(c, ids, tok);
	}
	free(list);
	return ok;
}

/* The module's uid (default nobody) and groups, as names or numbers; on
 * failure the client has been told why. */
static bool lookup_ids(struct conn *c, const struct daemon_module *m, struct module_ids *ids)
{
	const char *user = m->uid && *m->uid ? m->uid : "nobody";
	unsigned id;

	if (!name_to_id(user, false, &id))
		return bad_id(c, "uid", user);
	ids->uid = id;
	ids->ngids = 0;
	return lookup_groups(c, m, ids);
}

/* Does INNER (after "/./") name a directory below the chroot's root? */
static bool names_subdir(const char *inner)
{
	return inner[strspn(inner, "/.")] != '\0';
}

int enter_module(struct conn *c, const struct daemon_module *m)
{
	bool root = geteuid() == 0;
	struct module_ids ids;

	if (!m->path || !*m->path) {
		send_line(c, "@ERROR: no path setting.\n");
		return -1;
	}
	if (root && !lookup_ids(c, m, &ids))
		return -1;
	/* The module path is the admin's (oppath.h): resolved once, with no
	 * other user's symlink on the way, and entered by that fd. With
	 * "OUTER/./INNER" the chroot is OUTER and INNER is served. */
	const char *inner = m->use_chroot != 0 ? strstr(m->path, "/./") : NULL;
	char *outer = inner ? strndup(m->path, (size_t)(inner - m->path)) : NULL;
	if (inner && !outer) {
		send_line(c, "@ERROR: chroot failed\n");
		return -1;
	}
	const char *top = inner ? (*outer ? outer : "/") : m->path;
	int fd = oppath_open(AT_FDCWD, top, O_RDONLY | O_DIRECTORY, 0, module_oppath_how(m));
	int path_errno = errno;
	if (fd >= 0 && m->use_chroot != 0 && (root || inner) && fchdir(fd) == 0 &&
	    chroot(".") == 0 && chdir("/") == 0 && (!inner || chdir(inner + 2) == 0)) {
		close(fd);
		fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		c->chrooted = true;
		c->inner_subdir = inner && names_subdir(inner + 2);
	} else if ((m->use_chroot == 1 || inner) && !(fd < 0 && path_errno == ELOOP)) {
		daemon_log(c->cfg, m, "chroot(\"%s\") failed: %s", m->path,
			   strerror(fd < 0 ? path_errno : errno));
		send_line(c, "@ERROR: chroot failed\n");
		if (fd >= 0)
			close(fd);
		free(outer);
		return -1;
	} else if (fd >= 0 && fchdir(fd) < 0) {
		path_errno = errno;
		close(fd);
		fd = -1;
	}
	free(outer);
	if (fd < 0) {
		errno = path_errno;
		daemon_log(c->cfg, m, "ferry: chdir %s failed: %s (%d)", m->path, strerror(errno),
			   errno);
		send_line(c, "@ERROR: chdir failed\n");
		return -1;
	}
	if (root) {
		if (setgroups((size_t)ids.ngids, ids.gids) < 0 || setgid(ids.gids[0]) < 0 ||
		    setuid(ids.uid) < 0) {
			daemon_log(c->cfg, m, "dropping privileges failed: %s", strerror(errno));
			send_line(c, "@ERROR: setuid failed\n");
			close(fd);
			return -1;
		}
	}
	return fd;
}
bool enter_daemon_jail(const struct daemon_config *cfg)
{
	unsigned id;

	if (cfg->daemon_chroot && *cfg->daemon_chroot) {
		tzset();
		if (chroot(cfg->daemon_chroot) < 0) {
			daemon_log(cfg, NULL, "daemon chroot(\"%s\") failed: %s",
				   cfg->daemon_chroot, strerror(errno));
			return false;
		}
		if (chdir("/") < 0) {
			daemon_log(cfg, NULL, "daemon chdir(\"/\") failed: %s", strerror(errno));
			return false;
		}
	}
	if (cfg->daemon_gid && *cfg->daemon_gid) {
		if (!name_to_id(cfg->daemon_gid, true, &id)) {
			daemon_log(cfg, NULL, "Invalid daemon gid: %s", cfg->daemon_gid);
			return false;
		}
		gid_t gid = id;
		if ((geteuid() == 0 && setgroups(1, &gid) < 0) || setgid(gid) < 0) {
			daemon_log(cfg, NULL, "Unable to set group to daemon gid %u: %s", id,
				   strerror(errno));
			return false;
		}
	}
	if (cfg->daemon_uid && *cfg->daemon_uid) {
		if (!name_to_id(cfg->daemon_uid, false, &id)) {
			daemon_log(cfg, NULL, "Invalid daemon uid: %s", cfg->daemon_uid);
			return false;
		}
		if (setuid(id) < 0) {
			daemon_log(cfg, NULL, "Unable to set user to daemon uid %u: %s", id,
				   strerror(errno));
			return false;
		}
	}
	return true;
}
