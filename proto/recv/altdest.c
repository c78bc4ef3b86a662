/*
 * The directories beside the destination that the receiving side uses:
 * --compare-dest / --copy-dest / --link-dest (basis directories) and
 * --backup-dir. Relative names are relative to the destination directory,
 * as in rsync. In a daemon module "." and ".." are resolved lexically
 * against the module, which they may not leave; a symlink on the way is
 * followed only while it leads inside the module (oppath_open_in).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/base/oppath.h"
#include "proto/recv/recvside.h"

/* base + "/" + rel with "." and ".." resolved; false if it climbs above
 * the root. An absolute rel starts again from the root (a daemon treats
 * it as relative to the module, as rsync's sanitize_path does). */
static bool join_inside(const char *base, const char *rel, char *out, size_t size)
{
	char buf[8192];
	size_t n = 0;

	snprintf(buf, sizeof buf, "%s/%s", *rel == '/' ? "" : base, rel);
	out[0] = '\0';
	for (char *save = NULL, *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		if (strcmp(c, ".") == 0)
			continue;
		if (strcmp(c, "..") == 0) {
			if (n == 0)
				return false;
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
			out[n] = '\0';
			continue;
		}
		size_t len = strlen(c);
		if (n + len + 2 >= size)
			return false;
		if (n)
			out[n++] = '/';
		memcpy(out + n, c, len + 1);
		n += len;
	}
	return true;
}

/* The directory fd for a user's --*-dest or --backup-dir argument, or -1. */
static int open_side_dir(struct recv_ctx *rc, const char *dir, bool create)
{
	if (!rc->cfg.confined) {
		/* the operator's path: only trusted symlinks on the way, and
		 * under --confine-root only to a place inside it */
		bool insecure = rc->s->opts->insecure_links, made = false;
		int root = opts_confine_fd(rc->s->opts);
		if (!create)
			return oppath_open_under(root, rc->cfg.rootfd, dir, O_RDONLY | O_DIRECTORY, 0,
						 insecure);
		int fd = oppath_mkdirs_under(root, rc->cfg.rootfd, dir, 0777, insecure, &made);
		if (made && info_ge(rc->s->opts, INFO_BACKUP, 1))
			session_info(rc->s, "(new) backup_dir is %s\n", dir);
		return fd;
	}
	char rel[4096];
	if (!join_inside(rc->cfg.dest_rel ? rc->cfg.dest_rel : "", dir, rel, sizeof rel)) {
		errno = EACCES;
		return -1;
	}
	/* a trusted link inside the module is followed, never out of it */
	unsigned how = OPPATH_QUIET | (rc->s->opts->insecure_links ? OPPATH_INSECURE : 0);
	bool made;
	if (create)
		return oppath_mkdirs_in(rc->cfg.module_fd, rel, 0777, how, &made);
	return oppath_open_in(rc->cfg.module_fd, rel, O_RDONLY | O_DIRECTORY, 0, how);
}

/* base/rel into out, lexically: "." and empty components dropped, ".."
 * kept (rsync's clean_fname of curr_dir). */
static bool join_clean(const char *base, const char *rel, char *out, size_t size)
{
	char buf[8192];
	size_t n = 0;

	if ((size_t)snprintf(buf, sizeof buf, "%s/%s", base, rel) >= sizeof buf || size < 2)
		return false;
	if (*buf == '/')
		out[n++] = '/';
	out[n] = '\0';
	for (char *save = NULL, *c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		size_t len = strlen(c);
		if (strcmp(c, ".") == 0)
			continue;
		if (n + len + 2 >= size)
			return false;
		if (n && out[n - 1] != '/')
			out[n++] = '/';
		memcpy(out + n, c, len + 1);
		n += len;
	}
	if (n == 0)
		snprintf(out, size, ".");
	return true;
}

/* An operator's relative basis dir, as a path from the cwd: against the
 * destination, but in a dry run into a destination not made one leading
 * "../" is taken against the destination's parent (main.c:
 * check_alt_basis_dirs), so that "../to" names the same directory as in
 * a real run. */
static void alt_dest_path(const struct recv_ctx *rc, const char *dir, char *out, size_t size)
{
	char dest[4096];
	const char *rel = dir;

	snprintf(dest, sizeof dest, "%s", rc->cfg.dest_rel ? rc->cfg.dest_rel : ".");
	if (rc->cfg.dry_run_missing_root && strncmp(rel, "../", 3) == 0) {
		char *sl = strrchr(dest, '/');
		if (sl == dest)
			dest[1] = '\0'; /* the parent of "/x" is "/" */
		else if (sl)
			*sl = '\0';
		else
			snprintf(dest, sizeof dest, ".");
		rel += 3;
	}
	if (!join_clean(dest, rel, out, size))
		snprintf(out, size, "%s", dir); /* too long: fails as given */
}

/* "--link-dest arg does not exist: NAME" and its kin, as rsync warns:
 * NAME made absolute against the destination when it is relative, except
 * in a daemon module, where it is as given (sanitize_paths). */
static void warn_alt_dest(struct recv_ctx *rc, const char *what, const char *dir, int err)
{
	char rel[8192], cwd[4096], abs[8192];

	if (*dir == '/' || rc->cfg.confined) {
		snprintf(abs, sizeof abs, "%s", dir);
	} else {
		alt_dest_path(rc, dir, rel, sizeof rel);
		if (*rel == '/' || !getcwd(cwd, sizeof cwd) || !join_clean(cwd, rel, abs, sizeof abs))
			snprintf(abs, sizeof abs, "%s", rel);
	}
	session_warn(rc->s, "--%s arg %s: %s\n", what,
		     err == ENOTDIR ? "is not a dir" : "does not exist", abs);
}

int recv_open_side_dirs(struct recv_ctx *rc)
{
	const struct ferry_opts *o = rc->s->opts;
	static const char *const kind[] = {"", "compare-dest", "copy-dest", "link-dest"};

	rc->backup_fd = -1;
	rc->cfg.temp_fd = -1;
	rc->cfg.temp_dir_errno = 0;
	rc->cfg.nalt = 0;
	for (int i = 0; i < o->nalt_dest && i < ALT_DEST_MAX; i++) {
		const char *dir = o->alt_dest[i];
		char moved[8192];
		if (!rc->cfg.confined && rc->cfg.dry_run_missing_root && *dir != '/') {
			alt_dest_path(rc, dir, moved, sizeof moved);
			dir = moved;
		}
		rc->cfg.alt_fd[i] = open_side_dir(rc, dir, false);
		rc->cfg.alt_outside[i] = rc->cfg.alt_fd[i] < 0 && errno == ELOOP && !rc->cfg.confined &&
				     opts_confine_fd(o) != -1;
		/* a refused link was reported by the walk; rsync goes on
		 * without that basis dir */
		if (rc->cfg.alt_fd[i] < 0 && errno != ELOOP)
			warn_alt_dest(rc, kind[o->alt_dest_mode], o->alt_dest[i], errno);
		rc->cfg.nalt = i + 1;
	}
	rc->backup_dir_pending = false;
	if (o->backup && o->backup_dir && !o->dry_run) {
		/* a missing one is made at the first backup, as rsync does, so
		 * that making it does not show as a change of its parent; one
		 * behind a link out of the module (or --confine-root) fails
		 * there too */
		bool bounded = rc->cfg.confined || opts_confine_fd(o) != -1;
		rc->backup_fd = open_side_dir(rc, o->backup_dir, false);
		rc->backup_dir_pending = rc->backup_fd < 0 && (errno == ENOENT || (bounded && errno == ELOOP));
		if (rc->backup_fd < 0 && !rc->backup_dir_pending) {
			session_err(rc->s, "cannot open --backup-dir \"%s\": %s", o->backup_dir,
				    strerror(errno));
			return RERR_FILEIO;
		}
	}
	if (o->temp_dir && !o->dry_run) {
		/* the module's own "temp dir" is the administrator's path */
		rc->cfg.temp_fd = o->temp_dir_trusted
				      ? oppath_open(AT_FDCWD, o->temp_dir, O_RDONLY | O_DIRECTORY, 0,
						    OPPATH_QUIET | o->insecure_links)
				      : open_side_dir(rc, o->temp_dir, false);
		if (rc->cfg.temp_fd < 0 && errno == ELOOP) {
			rc->cfg.temp_dir_errno = ELOOP; /* each file fails, as in rsync */
		} else if (rc->cfg.temp_fd < 0) {
			session_err(rc->s, "The temp-dir does not exist: %s", o->temp_dir);
			return RERR_SYNTAX;
		}
	}
	return 0;
}

int recv_backup_dir(struct recv_ctx *rc)
{
	pthread_mutex_lock(&rc->lock);
	if (rc->backup_dir_pending) {
		rc->backup_dir_pending = false;
		rc->backup_fd = open_side_dir(rc, rc->s->opts->backup_dir, true);
		if (rc->backup_fd < 0) /* each backup fails: exit 23, as rsync's */
			session_xfer_err(rc->s, "cannot open --backup-dir \"%s\": %s",
					 rc->s->opts->backup_dir, strerror(errno));
	}
	int fd = rc->backup_fd;
	pthread_mutex_unlock(&rc->lock);
	return fd;
}

void recv_close_side_dirs(struct recv_ctx *rc)
{
	for (int i = 0; i < rc->cfg.nalt; i++)
		if (rc->cfg.alt_fd[i] >= 0)
			close(rc->cfg.alt_fd[i]);
	rc->cfg.nalt = 0;
	if (rc->backup_fd >= 0)
		close(rc->backup_fd);
	if (rc->cfg.temp_fd >= 0)
		close(rc->cfg.temp_fd);
	rc->backup_fd = rc->cfg.temp_fd = -1;
}

const char *recv_dest_dir(const struct recv_config *cfg, char *buf, size_t size)
{
	if (cfg->dest_rel)
		return cfg->dest_rel;
	if (!cfg->root_path)
		return NULL;
	snprintf(buf, size, "%s", cfg->root_path);
	char *slash = strrchr(buf, '/');
	if (cfg->solo_name) /* a file's new name: its directory */
		snprintf(slash ? slash : buf, slash ? 2 : size, slash ? "/" : ".");
	return buf;
}
