/*
 * Shared pieces of the libFuzzer harnesses in tests/fuzz/fuzz_*.c: option
 * bytes taken off the front of an input, a session whose input stream is
 * the rest of it, and quiet output. Each harness defines
 * LLVMFuzzerTestOneInput(); the same source links with libFuzzer (make
 * fuzz) or with tests/fuzz/replay.c (the corpus replay of make check).
 */
#ifndef FERRY_FUZZ_COMMON_H
#define FERRY_FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/base/opts.h"
#include "proto/core/session.h"

/* The unread part of an input. */
struct fuzz_input {
	const uint8_t *p;
	size_t n;
};

/* Take one byte off the front (0 once the input is used up), so the first
 * bytes of an input can choose a harness's options. */
uint8_t fuzz_take_byte(struct fuzz_input *in);

/* A read/write descriptor on /dev/null, opened once: reads see EOF. */
int fuzz_null_fd(void);
/* A FILE on /dev/null, opened once, for output the harness discards. */
FILE *fuzz_null_file(void);

/* A memory file holding data[0..n), positioned at its start; -1 on
 * failure. The caller closes it. */
int fuzz_memfd(const uint8_t *data, size_t n);

/* One memory file per process holding data[0..n) (and nothing after it),
 * positioned at its start; -1 on failure. The caller must not close it:
 * the next call refills it, which costs no memfd_create() and close() per
 * input. Reads at its end see EOF, as on the single-use fuzz_memfd(). */
int fuzz_input_fd(const uint8_t *data, size_t n);

/* session_init() with an input stream that yields data[0..n) and then
 * EOF, output to /dev/null, and MSG_INFO output discarded. opts must
 * outlive the session. Free with fuzz_session_free(). */
void fuzz_session_init(struct session *s, const struct ferry_opts *opts, const uint8_t *data,
		       size_t n);
void fuzz_session_free(struct session *s);

/* Negotiated protocol facts as negotiate.c sets them: protocol (27..32)
 * on the session and both streams, compat flags, the checksums implied. */
void fuzz_session_protocol(struct session *s, int protocol, uint32_t compat_flags);

#endif
