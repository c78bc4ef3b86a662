/*
 * --copy-as (see copy_as.h). Mirrors rsync main.c: become_copy_as_user().
 */
#include "proto/meta/copy_as.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/core/session.h"
#include "proto/base/wire.h"

/* A name, or a number when it is all digits (uidlist.c: user_to_uid). */
static bool lookup_uid(const char *name, uid_t *uid)
{
	char *end;

	if (!*name)
		return false;
	unsigned long n = strtoul(name, &end, 10);
	if (*end == '\0' && n <= (uid_t)-2) {
		*uid = (uid_t)n;
		return true;
	}
	struct passwd *pw = getpwnam(name);
	if (!pw)
		return false;
	*uid = pw->pw_uid;
	return true;
}

static bool lookup_gid(const char *name, gid_t *gid)
{
	char *end;

	if (!*name)
		return false;
	unsigned long n = strtoul(name, &end, 10);
	if (*end == '\0' && n <= (gid_t)-2) {
		*gid = (gid_t)n;
		return true;
	}
	struct group *gr = getgrnam(name);
	if (!gr)
		return false;
	*gid = gr->gr_gid;
	return true;
}

static bool sys_fail(struct session *s, const char *what)
{
	int e = errno;

	return wire_fail(&s->err, RERR_SYNTAX, "%s failed: %s (%d)", what, strerror(e), e);
}

bool copy_as_become(struct session *s, const char *spec)
{
	char user[256];
	const char *group = NULL;
	uid_t uid;
	gid_t gid;

	if (!spec)
		return true;
	if (strlen(spec) >= sizeof user)
		return wire_fail(&s->err, RERR_SYNTAX, "Invalid copy-as user: %s", spec);
	snprintf(user, sizeof user, "%s", spec);
	char *colon = strchr(user, ':');
	if (colon) {
		*colon = '\0';
		group = spec + (colon - user) + 1;
	}
	if (!lookup_uid(user, &uid))
		return wire_fail(&s->err, RERR_SYNTAX, "Invalid copy-as user: %s", user);
	if (group) {
		if (!lookup_gid(group, &gid))
			return wire_fail(&s->err, RERR_SYNTAX, "Invalid copy-as group: %s", group);
	} else {
		errno = 0;
		struct passwd *pw = getpwuid(uid);
		if (!pw)
			return sys_fail(s, "getpwuid");
		gid = pw->pw_gid;
	}
	if (setgid(gid) < 0)
		return sys_fail(s, "setgid");
	if (setgroups(1, &gid) < 0)
		return sys_fail(s, "setgroups");
	if (!group && initgroups(user, gid) < 0)
		return sys_fail(s, "initgroups");
	if (setuid(uid) < 0 || seteuid(uid) < 0)
		return sys_fail(s, "setuid");
	s->am_root = geteuid() == 0;
	return true;
}
