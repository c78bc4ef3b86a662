/*
 * --chmod rules with rsync's semantics (chmod.c: parse_chmod, tweak_mode):
 * each clause is [D|F][ugoa]*(+|-|=)[rwxXst]* or [ugo] copy, or an octal
 * number; D and F limit a clause to directories or files.
 */
#include "proto/base/chmod.h"

#include <stdlib.h>
#include <sys/stat.h>

#define CHMOD_BITS 07777
#define FLAG_X_KEEP 1
#define FLAG_DIRS_ONLY 2
#define FLAG_FILES_ONLY 4

enum { OP_NONE, OP_ADD, OP_SUB, OP_EQ, OP_SET };

struct clause {
	int where, what, op, topbits, topoct, flags, copybits;
};

static int special_bits_for(int where)
{
	return (where & 0100 ? S_ISUID : 0) | (where & 0010 ? S_ISGID : 0) |
	       (where & 0001 ? S_ISVTX : 0);
}

static struct chmod_rule clause_rule(const struct clause *c, mode_t umask_bits)
{
	struct chmod_rule r = {.op = c->op, .flags = c->flags, .copy_src = c->copybits};
	int where = c->where, bits;
	int copy_and = where ? CHMOD_BITS : (int)~umask_bits;

	if (where) {
		bits = where * c->what;
	} else {
		where = 0111;
		bits = (where * c->what) & (int)~umask_bits;
	}
	r.copy_dst = where;
	r.copy_and = copy_and;
	switch (c->op) {
	case OP_ADD:
		r.and_mask = CHMOD_BITS;
		r.or_mask = bits + c->topoct;
		break;
	case OP_SUB:
		r.and_mask = CHMOD_BITS - bits - c->topoct;
		break;
	case OP_EQ:
		r.and_mask = CHMOD_BITS - where * 7 - (c->topoct ? c->topbits : 0) -
			     (c->copybits ? special_bits_for(where) : 0);
		r.or_mask = bits + c->topoct;
		break;
	case OP_SET:
		r.or_mask = bits;
		r.copy_src = r.copy_dst = 0;
		r.copy_and = CHMOD_BITS;
		break;
	}
	return r;
}

/* The part before the operator: D/F and who. */
static bool first_half(struct clause *c, char ch, bool *to_second, bool *octal)
{
	switch (ch) {
	case 'D':
		if (c->flags & FLAG_FILES_ONLY)
			return false;
		c->flags |= FLAG_DIRS_ONLY;
		return true;
	case 'F':
		if (c->flags & FLAG_DIRS_ONLY)
			return false;
		c->flags |= FLAG_FILES_ONLY;
		return true;
	case 'u': c->where |= 0100; c->topbits |= 04000; return true;
	case 'g': c->where |= 0010; c->topbits |= 02000; return true;
	case 'o': c->where |= 0001; return true;
	case 'a': c->where |= 0111; c->topbits |= 06000; return true;
	case '+': c->op = OP_ADD; *to_second = true; return true;
	case '-': c->op = OP_SUB; *to_second = true; return true;
	case '=': c->op = OP_EQ; *to_second = true; return true;
	default:
		if (ch >= '0' && ch <= '7' && !c->where) {
			c->op = OP_SET;
			c->where = 1;
			c->what = ch - '0';
			*octal = true;
			return true;
		}
		return false;
	}
}

/* The part after the operator: permission letters or a copy source. */
static bool second_half(struct clause *c, char ch)
{
	bool copy = c->copybits != 0;

	switch (ch) {
	case 'r': c->what |= 4; return !copy;
	case 'w': c->what |= 2; return !copy;
	case 'X': c->flags |= FLAG_X_KEEP; c->what |= 1; return !copy;
	case 'x': c->what |= 1; return !copy;
	case 's':
		if (c->topbits)
			c->topoct |= c->topbits;
		else
			c->topoct = 04000;
		return !copy;
	case 't': c->topoct |= 01000; return !copy;
	case 'u': case 'g': case 'o':
		if (c->what || c->topoct || copy)
			return false;
		c->copybits = ch == 'u' ? 0100 : ch == 'g' ? 0010 : 0001;
		return true;
	default:
		return false;
	}
}

static bool push_rule(struct chmod_rules *r, struct chmod_rule rule)
{
	struct chmod_rule *v = realloc(r->v, (r->n + 1) * sizeof *v);

	if (!v)
		return false;
	r->v = v;
	r->v[r->n++] = rule;
	return true;
}

bool chmod_parse(struct chmod_rules *r, const char *spec, mode_t umask_bits)
{
	size_t start = r->n;

	for (const char *p = spec;;) {
		struct clause c = {0};
		bool second = false, octal = false;
		for (; *p && *p != ','; p++) {
			bool ok;
			if (octal) {
				ok = *p >= '0' && *p <= '7' && (c.what = c.what * 8 + (*p - '0')) <= CHMOD_BITS;
			} else if (second) {
				ok = second_half(&c, *p);
			} else {
				ok = first_half(&c, *p, &second, &octal);
			}
			if (!ok)
				goto fail;
		}
		if (c.op == OP_NONE || !push_rule(r, clause_rule(&c, umask_bits)))
			goto fail;
		if (!*p)
			return true;
		p++;
	}
fail:
	r->n = start;
	return false;
}

void chmod_free(struct chmod_rules *r)
{
	free(r->v);
	r->v = NULL;
	r->n = 0;
}

static int copy_bits(int mode, const struct chmod_rule *c)
{
	int bits = 0;

	if (c->copy_src & 0100)
		bits |= (mode >> 6) & 7;
	if (c->copy_src & 0010)
		bits |= (mode >> 3) & 7;
	if (c->copy_src & 0001)
		bits |= mode & 7;
	return (c->copy_dst * bits) & c->copy_and;
}

mode_t chmod_apply(const struct chmod_rules *r, mode_t mode_in)
{
	int mode = (int)mode_in;
	int is_x = mode & 0111;
	int non_perm = mode & ~CHMOD_BITS;

	for (size_t i = 0; i < r->n; i++) {
		const struct chmod_rule *c = &r->v[i];
		if ((c->flags & FLAG_DIRS_ONLY) && !S_ISDIR(non_perm))
			continue;
		if ((c->flags & FLAG_FILES_ONLY) && S_ISDIR(non_perm))
			continue;
		int cb = copy_bits(mode, c);
		mode &= c->and_mask;
		if ((c->flags & FLAG_X_KEEP) && !is_x && !S_ISDIR(non_perm))
			mode |= c->or_mask & ~0111;
		else
			mode |= c->or_mask;
		if (c->op == OP_SUB)
			mode &= CHMOD_BITS - cb;
		else
			mode |= cb;
	}
	return (mode_t)(mode | non_perm);
}
