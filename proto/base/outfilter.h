/*
 * Printing names safely: control characters (and, without -8, characters
 * the locale cannot print) are shown as \#ooo, so a hostile file name
 * cannot drive the terminal (log.c: filtered_fwrite).
 */
#ifndef FERRY_OUTFILTER_H
#define FERRY_OUTFILTER_H

#include <stdbool.h>
#include <stdio.h>

/* Write s followed by end (if not '\0') with rsync's escaping. */
void out_filtered(FILE *f, const char *s, bool allow_8bit, char end);

/* The log file's escaping (log.c: logit): len bytes of s into dst
 * (NUL-terminated, cut short at size), control characters other than tab,
 * the C1 controls 0x80-0x9f and a literal "\#ddd" shown as \#ooo; other
 * bytes, whatever the locale, as they are. Returns the length written. */
size_t out_escape_log(char *dst, size_t size, const char *s, size_t len);

#endif
