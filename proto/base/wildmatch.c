/*
 * rsync-compatible wildcard matching (see wildmatch.h for the syntax).
 *
 * rsync's lib/wildmatch.c is a recursive backtracker kept in check by its
 * ABORT_ALL/ABORT_TO_STARSTAR shortcuts. We get the same answers another
 * way: the pattern is compiled into a token list (a class becomes a
 * 256-bit set), and the text is run through it as a nondeterministic
 * automaton whose states are token positions. Each text byte costs at most
 * one visit per token, so time is O(text x pattern) whatever the pattern.
 */
#include "proto/base/wildmatch.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum tok_type {
	T_LIT,   /* one given byte */
	T_ANY,   /* '?': any byte but '/' */
	T_CLASS, /* '[...]': a byte of the set (never '/') */
	T_STAR,  /* '*': a run of non-'/' bytes */
	T_STAR2, /* '**': a run of any bytes */
};

struct tok {
	uint8_t type;
	uint8_t ch;    /* T_LIT */
	uint32_t cls;  /* T_CLASS: index into the class sets */
};

struct cset {
	uint8_t bits[32];
};

struct prog {
	struct tok *tok;
	size_t n;
	struct cset *cls;
	size_t ncls;
	bool never;    /* malformed: matches nothing, as rsync's ABORT_ALL */
};

static void cset_add(struct cset *c, unsigned ch)
{
	c->bits[ch >> 3] |= (uint8_t)(1u << (ch & 7));
}

static bool cset_has(const struct cset *c, unsigned ch)
{
	return c->bits[ch >> 3] & (1u << (ch & 7));
}

/* A [:name:] class; false for a name rsync does not know. */
static bool cset_add_named(struct cset *c, const char *name, size_t len)
{
	static const struct {
		const char *name;
		int (*fn)(int);
	} names[] = {
		{ "alnum", isalnum }, { "alpha", isalpha }, { "blank", isblank },
		{ "cntrl", iscntrl }, { "digit", isdigit }, { "graph", isgraph },
		{ "lower", islower }, { "print", isprint }, { "punct", ispunct },
		{ "space", isspace }, { "upper", isupper }, { "xdigit", isxdigit },
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (strlen(names[i].name) != len || memcmp(names[i].name, name, len))
			continue;
		for (unsigned ch = 1; ch < 256; ch++) {
			/* rsync's ISxxx macros are ASCII-only in the C locale. */
			if (ch < 128 && names[i].fn((int)ch))
				cset_add(c, ch);
		}
		return true;
	}
	return false;
}

/* Parse the class whose '[' is at *pp into c, leaving *pp on its closing
 * ']'. Mirrors the class loop of wildmatch.c: dowild, including its quirks
 * (a ']' first is literal, '-' is literal first/last/after a range, "[:"
 * without ":]" makes the '[' literal). False if malformed. */
static bool parse_class(const unsigned char **pp, struct cset *c)
{
	const unsigned char *p = *pp;
	unsigned p_ch = *++p, prev_ch = 0;
	bool negate;

	if (p_ch == '^')
		p_ch = '!';
	negate = p_ch == '!';
	if (negate)
		p_ch = *++p;
	memset(c, 0, sizeof *c);
	do {
		if (!p_ch)
			return false;
		if (p_ch == '\\') {
			if (!(p_ch = *++p))
				return false;
			cset_add(c, p_ch);
		} else if (p_ch == '-' && prev_ch && p[1] && p[1] != ']') {
			p_ch = *++p;
			if (p_ch == '\\' && !(p_ch = *++p))
				return false;
			for (unsigned ch = prev_ch; ch <= p_ch; ch++)
				cset_add(c, ch);
			p_ch = 0; /* a range is never the start of another */
		} else if (p_ch == '[' && p[1] == ':') {
			const unsigned char *s = p + 2, *e = s;
			while (*e && *e != ']')
				e++;
			if (!*e)
				return false;
			if (e == s || e[-1] != ':') {
				/* no ":]": the '[' is just a member */
				cset_add(c, '[');
				p_ch = '[';
				continue;
			}
			if (!cset_add_named(c, (const char *)s, (size_t)(e - s - 1)))
				return false;
			p = e;
			p_ch = 0;
		} else {
			cset_add(c, p_ch);
		}
	} while (prev_ch = p_ch, (p_ch = *++p) != ']');
	if (negate) {
		for (size_t i = 0; i < sizeof c->bits; i++)
			c->bits[i] = (uint8_t)~c->bits[i];
	}
	c->bits['/' >> 3] &= (uint8_t)~(1u << ('/' & 7));
	c->bits[0] &= (uint8_t)~1u;
	*pp = p;
	return true;
}

/* Compile pattern into pr (arrays sized by the caller: strlen+1 tokens,
 * strlen/2+1 classes). */
static void compile(const char *pattern, struct prog *pr)
{
	const unsigned char *p = (const unsigned char *)pattern;

	pr->n = pr->ncls = 0;
	pr->never = false;
	for (; *p; p++) {
		struct tok *t = &pr->tok[pr->n++];
		switch (*p) {
		case '\\':
			if (!p[1]) {
				pr->never = true; /* compares against NUL: never equal */
				return;
			}
			t->type = T_LIT;
			t->ch = *++p;
			break;
		case '?':
			t->type = T_ANY;
			break;
		case '*':
			t->type = T_STAR;
			while (p[1] == '*') {
				t->type = T_STAR2;
				p++;
			}
			break;
		case '[':
			t->type = T_CLASS;
			t->cls = (uint32_t)pr->ncls;
			if (!parse_class(&p, &pr->cls[pr->ncls++])) {
				pr->never = true;
				return;
			}
			break;
		default:
			t->type = T_LIT;
			t->ch = *p;
			break;
		}
	}
}

/* The automaton's state set: a list of token positions plus a stamp per
 * position saying in which generation it was added. */
struct stateset {
	uint32_t *list;
	size_t len;
};

struct sim {
	const struct prog *pr;
	uint32_t *stamp;
	uint32_t gen;
};

/* Add state i and, since a star may match nothing, the states after it. */
static void add_state(struct sim *sm, struct stateset *ss, size_t i)
{
	for (;;) {
		if (sm->stamp[i] == sm->gen)
			return;
		sm->stamp[i] = sm->gen;
		ss->list[ss->len++] = (uint32_t)i;
		if (i == sm->pr->n)
			return;
		uint8_t ty = sm->pr->tok[i].type;
		if (ty != T_STAR && ty != T_STAR2)
			return;
		i++;
	}
}

static void step(struct sim *sm, const struct stateset *cur, struct stateset *nxt,
		 unsigned ch)
{
	const struct prog *pr = sm->pr;

	nxt->len = 0;
	sm->gen++;
	for (size_t k = 0; k < cur->len; k++) {
		size_t i = cur->list[k];
		if (i == pr->n)
			continue;
		const struct tok *t = &pr->tok[i];
		switch (t->type) {
		case T_LIT:
			if (ch == t->ch)
				add_state(sm, nxt, i + 1);
			break;
		case T_ANY:
			if (ch != '/')
				add_state(sm, nxt, i + 1);
			break;
		case T_CLASS:
			if (cset_has(&pr->cls[t->cls], ch))
				add_state(sm, nxt, i + 1);
			break;
		case T_STAR:
			if (ch != '/')
				add_state(sm, nxt, i);
			break;
		case T_STAR2:
			add_state(sm, nxt, i);
			break;
		}
	}
}

/* Run the program over text. With anywhere, a new match may also start
 * after every '/' (wildmatch_array's where < 0). */
static bool run(const struct prog *pr, const char *text, bool anywhere, uint32_t *stamp,
		uint32_t *la, uint32_t *lb)
{
	struct sim sm = { pr, stamp, 1 };
	struct stateset a = { la, 0 }, b = { lb, 0 };
	struct stateset *cur = &a, *nxt = &b;
	const unsigned char *t = (const unsigned char *)text;

	memset(stamp, 0, (pr->n + 1) * sizeof *stamp);
	add_state(&sm, cur, 0);
	for (; *t; t++) {
		step(&sm, cur, nxt, *t);
		if (anywhere && *t == '/')
			add_state(&sm, nxt, 0);
		struct stateset *sw = cur;
		cur = nxt;
		nxt = sw;
		if (!cur->len && !anywhere)
			return false;
	}
	return stamp[pr->n] == sm.gen;
}

/* Where a "last N elements" match starts (wildmatch.c:
 * trailing_N_elements), or NULL if text has fewer than n elements. */
static const char *trailing_elements(const char *text, int n)
{
	const char *s = text + strlen(text);

	while (--s >= text) {
		if (*s == '/' && !--n)
			return s + 1;
	}
	return n == 1 ? text : NULL;
}

bool wildmatch_where(const char *pattern, const char *text, int where)
{
	enum { SMALL = 256 };
	struct tok tok_s[SMALL + 1];
	struct cset cls_s[SMALL / 2 + 1];
	uint32_t st_s[SMALL + 1], la_s[SMALL + 1], lb_s[SMALL + 1];
	size_t plen = strlen(pattern);
	struct prog pr = { tok_s, 0, cls_s, 0, false };
	uint32_t *st = st_s, *la = la_s, *lb = lb_s;
	void *heap = NULL;
	bool ok;

	if (where > 0 && !(text = trailing_elements(text, where)))
		return false;
	if (plen > SMALL) {
		size_t nt = plen + 1;
		heap = malloc(nt * sizeof(struct tok) + (plen / 2 + 1) * sizeof(struct cset) +
			      3 * nt * sizeof(uint32_t));
		if (!heap)
			return false;
		pr.cls = heap;
		pr.tok = (struct tok *)(pr.cls + plen / 2 + 1);
		st = (uint32_t *)(pr.tok + nt);
		la = st + nt;
		lb = la + nt;
	}
	compile(pattern, &pr);
	ok = !pr.never && run(&pr, text, where < 0, st, la, lb);
	free(heap);
	return ok;
}

bool wildmatch(const char *pattern, const char *text)
{
	return wildmatch_where(pattern, text, 0);
}

bool litmatch_where(const char *string, const char *text, int where)
{
	if (where > 0 && !(text = trailing_elements(text, where)))
		return false;
	return strcmp(string, text) == 0;
}
