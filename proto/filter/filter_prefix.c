/*
 * A rule's modifier prefix as text ("-/!s ", rsync's exclude.c:
 * get_rule_prefix): what the wire carries for each rule (filter_wire.c)
 * and what --debug=FILTER shows (filter.c). Below both.
 */
#include "proto/filter/filter.h"

int filter_rule_prefix(const struct filter_rule *r, bool for_xfer, int protocol,
		       bool am_sender, bool delete_excluded, char *buf)
{
	uint32_t f = r->flags;
	int legal = for_xfer && protocol < 29 ? 1 : 15;
	char *op = buf;

	if (f & FR_PERDIR_MERGE) {
		if (legal == 1)
			return -1;
		*op++ = ':';
	} else if (f & FR_INCLUDE) {
		*op++ = '+';
	} else if (legal != 1 || ((r->pattern[0] == '-' || r->pattern[0] == '+') &&
				  r->pattern[1] == ' ')) {
		/* an old peer needs "- " only where the pattern would read as one */
		*op++ = '-';
	} else {
		legal = 0;
	}
	if (f & FR_ABS_PATH)
		*op++ = '/';
	if (f & FR_NEGATE)
		*op++ = '!';
	if (f & FR_CVS_IGNORE) {
		*op++ = 'C';
	} else {
		if (f & FR_NO_INHERIT)
			*op++ = 'n';
		if (f & FR_WORD_SPLIT)
			*op++ = 'w';
		if (f & FR_NO_PREFIXES)
			*op++ = f & FR_INCLUDE ? '+' : '-';
	}
	if (f & FR_EXCLUDE_SELF)
		*op++ = 'e';
	if (f & FR_XATTR)
		*op++ = 'x';
	if (f & FR_SENDER_SIDE && (!for_xfer || protocol >= 29))
		*op++ = 's';
	if (f & FR_RECEIVER_SIDE &&
	    (!for_xfer || protocol >= 29 || (delete_excluded && am_sender)))
		*op++ = 'r';
	if (f & FR_PERISHABLE) {
		if (!for_xfer || protocol >= 30)
			*op++ = 'p';
		else if (am_sender)
			return -1;
	}
	if (op - buf > legal)
		return -1;
	if (legal)
		*op++ = ' ';
	*op = '\0';
	return (int)(op - buf);
}
