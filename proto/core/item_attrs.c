/*
 * Reading a file index's attributes and the deletion counts (item_attrs.h).
 */
#include "proto/core/item_attrs.h"

#include "proto/base/wire.h"
#include "proto/core/session.h"

bool item_attrs_read(struct session *s, int *iflags, uint8_t *basis_type, char *xname,
		     size_t xsize)
{
	if (s->protocol >= 29) {
		uint16_t v;
		if (!wire_read_u16(&s->in, &v))
			return false;
		*iflags = v;
	} else {
		*iflags = ITEM_TRANSFER | ITEM_MISSING_DATA;
	}
	*basis_type = FNAMECMP_FNAME;
	if ((*iflags & ITEM_BASIS_TYPE_FOLLOWS) && !wire_read_u8(&s->in, basis_type))
		return false;
	xname[0] = '\0';
	return !(*iflags & ITEM_XNAME_FOLLOWS) || wire_read_vstring(&s->in, xname, xsize);
}

bool del_stats_read(struct session *s, int32_t counts[5])
{
	for (int i = 0; i < 5; i++) {
		if (!wire_read_varint(&s->in, &counts[i]))
			return false;
		if (counts[i] < 0)
			return wire_fail(&s->err, RERR_PROTOCOL, "negative deletion count");
	}
	return true;
}
