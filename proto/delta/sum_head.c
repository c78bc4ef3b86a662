/*
 * Reading and writing the head of a file's block sums (sum_head.h).
 */
#include "proto/delta/sum_head.h"

#include "proto/base/checksum.h"
#include "proto/base/wire.h"
#include "proto/core/session.h"

static bool sum_head_check(struct session *s, const struct sum_head *h)
{
	int32_t max_block = s->protocol < 30 ? (1 << 29) : (1 << 17);

	if (h->count < 0)
		return wire_fail(&s->err, RERR_PROTOCOL, "Invalid checksum count %d", h->count);
	if (h->blength < 0 || h->blength > max_block || (h->count > 0 && h->blength == 0))
		return wire_fail(&s->err, RERR_PROTOCOL, "Invalid block length %d", h->blength);
	if (h->s2length < 0 || (size_t)h->s2length > csum_len(s->xfer_csum) || h->s2length > 16)
		return wire_fail(&s->err, RERR_PROTOCOL, "Invalid checksum length %d", h->s2length);
	if (h->remainder < 0 || h->remainder > h->blength)
		return wire_fail(&s->err, RERR_PROTOCOL, "Invalid remainder length %d", h->remainder);
	if ((size_t)h->count * (4 + (size_t)h->s2length) > SUM_HEAD_MAX_SUMS_BYTES)
		return wire_fail(&s->err, RERR_PROTOCOL, "too many block sums (%d)", h->count);
	return true;
}

bool sum_head_read(struct session *s, struct sum_head *h)
{
	if (!wire_read_i32(&s->in, &h->count) || !wire_read_i32(&s->in, &h->blength))
		return false;
	if (s->protocol >= 27) {
		if (!wire_read_i32(&s->in, &h->s2length))
			return false;
	} else {
		h->s2length = 2;
	}
	if (!wire_read_i32(&s->in, &h->remainder))
		return false;
	return sum_head_check(s, h);
}

bool sum_head_write(struct session *s, const struct sum_head *h)
{
	return wire_write_i32(&s->out, h->count) && wire_write_i32(&s->out, h->blength) &&
	       (s->protocol < 27 || wire_write_i32(&s->out, h->s2length)) &&
	       wire_write_i32(&s->out, h->remainder);
}
