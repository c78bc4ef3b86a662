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

#endif
