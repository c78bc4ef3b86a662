/*
 * "refuse options" (rsyncd.conf): which rows of the option table a daemon
 * module refuses (options.c: set_refuse_options, parse_one_refuse_match).
 * Names match long names or short letters, with wildcards; "!" accepts
 * again; "a"/"archive" stands for everything -a implies; a few vital
 * options only match by exact name; copy-devices and write-devices are
 * refused unless accepted by exact name, and log-file* and insecure-links
 * always are.
 */
#include <stdlib.h>
#include <string.h>

#include "proto/args/options.h"
#include "proto/base/wildmatch.h"

static bool exact_only(const struct opt_spec *sp)
{
	static const char *const vital[] = {"iconv", "no-iconv", "checksum-seed", "copy-devices",
					    "write-devices", "log-format", "sender", "server",
					    "dry-run", "rsh", "from0", "secluded-args",
					    "protect-args", NULL};
	const char *name = sp->name ? sp->name : "";

	for (int i = 0; vital[i]; i++)
		if (strcmp(vital[i], name) == 0)
			return true;
	return sp->shortopt == 'e' || sp->shortopt == '0' || sp->shortopt == 's' ||
	       sp->shortopt == 'n';
}

static bool row_matches(const struct opt_spec *sp, const char *ref)
{
	char shortname[2] = {sp->shortopt, '\0'};

	return (sp->name && wildmatch(ref, sp->name)) || (sp->shortopt && wildmatch(ref, shortname));
}

/* One word of the list; refused[] has a row per table entry. */
static void refuse_one(bool *refused, const char *ref, bool negated)
{
	bool wild = strpbrk(ref, "*?[") != NULL;
	int matched = -1;

	if (strcmp(ref, "a") == 0 || strcmp(ref, "archive") == 0) {
		ref = "[ardlptgoD]";
		wild = true;
	}
	for (int i = 0; i < options_table_len; i++) {
		const struct opt_spec *sp = &options_table[i];
		if (!row_matches(sp, ref) || (wild && exact_only(sp)))
			continue;
		refused[i] = !negated;
		if (!wild) {
			matched = i;
			break;
		}
	}
	/* The other spellings of the same action follow (same_refuse_action). */
	for (int i = 0; matched >= 0 && i < options_table_len; i++)
		if (options_table[i].id == options_table[matched].id &&
		    options_table[i].val == options_table[matched].val)
			refused[i] = !negated;
}

bool *options_refusals(const char *list)
{
	bool *refused = calloc((size_t)options_table_len, sizeof *refused);
	char *copy = strdup(list ? list : ""), *save = NULL;

	if (!refused || !copy) {
		free(refused);
		free(copy);
		return NULL;
	}
	refuse_one(refused, "copy-devices", false);
	refuse_one(refused, "write-devices", false);
	for (char *w = strtok_r(copy, " \t,", &save); w; w = strtok_r(NULL, " \t,", &save)) {
		bool negated = w[0] == '!' && w[1];
		refuse_one(refused, negated ? w + 1 : w, negated);
	}
	refuse_one(refused, "log-file*", false);
	refuse_one(refused, "insecure-links", false);
	free(copy);
	return refused;
}

int options_refused_row(const bool *refused, const char *name)
{
	for (int i = 0; refused && i < options_table_len; i++)
		if (options_table[i].name && strcmp(options_table[i].name, name) == 0)
			return refused[i] ? i : -1;
	return -1;
}
