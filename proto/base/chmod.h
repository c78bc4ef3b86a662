/*
 * --chmod: rsync's chmod-style rules ("Dg+s,ug+w,Fo-w,+X", "D755,F644")
 * applied to the permissions of received entries (chmod.c).
 */
#ifndef FERRY_CHMOD_H
#define FERRY_CHMOD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct chmod_rule {
	int and_mask, or_mask;
	int copy_src, copy_dst, copy_and;
	int op;
	int flags;
};

struct chmod_rules {
	struct chmod_rule *v;
	size_t n;
};

/* Parse one --chmod value (comma-separated clauses) and append its rules.
 * umask_bits is the process umask, used where no "who" is given.
 * Returns false on a syntax error. */
bool chmod_parse(struct chmod_rules *r, const char *spec, mode_t umask_bits);
void chmod_free(struct chmod_rules *r);
/* The mode after the rules (permission bits only change). */
mode_t chmod_apply(const struct chmod_rules *r, mode_t mode);

#endif
