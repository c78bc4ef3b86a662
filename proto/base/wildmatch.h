/*
 * Shell-style pattern matching with rsync's semantics (lib/wildmatch.c):
 *
 *   ?        any one character except '/'
 *   *        any run of characters without a '/'
 *   ** (***) any run of characters, slashes included
 *   [...]    a class: ranges a-z, [:alpha:]-style names, a leading '!' or
 *            '^' negates; ']' right after the opening (or the negation) is
 *            literal; a class never matches '/'
 *   \c       the character c literally (also inside a class)
 *
 * A malformed class (unterminated, unknown [:name:]) or a trailing lone
 * backslash makes the pattern match nothing, as in rsync.
 *
 * The matcher simulates the pattern as a small automaton (one pass over
 * the text, O(text x pattern)), so no pattern can make it blow up.
 */
#ifndef FERRY_WILDMATCH_H
#define FERRY_WILDMATCH_H

#include <stdbool.h>

/* Does the whole of text match pattern? (wildmatch.c: wildmatch) */
bool wildmatch(const char *pattern, const char *text);

/* wildmatch.c: wildmatch_array on the already joined text. where == 0:
 * the whole text; where > 0: only its last `where` slash-separated
 * elements (no match if it has fewer); where < 0: the text itself or any
 * tail of it that follows a '/'. */
bool wildmatch_where(const char *pattern, const char *text, int where);

/* wildmatch.c: litmatch_array: pattern is a plain string (no wildcards,
 * no escapes), compared as wildmatch_where would place it. */
bool litmatch_where(const char *string, const char *text, int where);

#endif
