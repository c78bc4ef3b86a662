/*
 * Inside the token streams (token.c, its codecs token_zlib.c,
 * token_zstd.c, token_lz4.c, and the chunk layer under them all,
 * token_chunk.c): the flag bytes, the encoder's and decoder's state, and
 * the codec table. Not for use outside these files.
 */
#ifndef FERRY_TOKEN_INT_H
#define FERRY_TOKEN_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <zlib.h>
/* for ZSTD_getFrameProgression: the adaptive rule reads how much zstd has
 * compressed instead of flushing it (a flush costs bytes) */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include "proto/delta/token.h"
#include "proto/base/sendq.h"
#include "proto/delta/zadapt.h"

#define END_FLAG 0x00
#define TOKEN_LONG 0x20
#define TOKENRUN_LONG 0x21
#define DEFLATED_DATA 0x40
#define TOKEN_REL 0x80
#define TOKENRUN_REL 0xC0

#define MAX_RUN 65535           /* a run's count is 16 bits */
#define STORED_MAX 0xFFFF       /* largest stored deflate block */
#define LITERAL_PIECE (64 * 1024) /* uncompressed literal read size */
#define INFLATE_OUT (64 * 1024)
/* rsync's lz4 receive buffer: max(LZ4_compressBound(CHUNK_SIZE), 16385). */
#define LZ4_OUT_MAX (32768 + 32768 / 255 + 16)
/* A literal-only lz4 block of this many bytes fits in one chunk. */
#define LZ4_RAW_PIECE 16256
#define ZLIB_PEND_CAP (96 * 1024)
/* A zstd Raw block of ours: the most a frame with a 128 KiB window takes
 * (RFC 8878 Block_Maximum_Size), so per byte no more headers than zstd's
 * own Raw blocks. */
#define ZSTD_RAW_BLOCK_MAX (128 * 1024)

struct token_codec;

struct token_enc {
	const struct token_codec *codec;
	int alg, protocol;
	int level;          /* the normal level */
	struct wire_error *err;
	struct zadapt za;   /* ferry's adaptive rule (zadapt.h) */
	bool timed;         /* measure compressing and waiting (token_enc_set_timing) */
	token_clock_fn clock; /* a test's clock instead of the real one */
	void *clock_ctx;
	int setting;        /* the setting the compressor runs at now */
	int threads;        /* zstd worker threads (0: none) */

	/* this file */
	bool file_minimal;  /* on the skip list: no compression effort at all */
	bool first_done;    /* the file's first (short) window has ended */
	bool hist_gap;      /* zlib: a matched block skipped the history while
			     * storing, so this file stays stored */
	int64_t file_in;    /* literal bytes of this file */
	uint64_t left;      /* input to come when this file began (UINT64_MAX:
			     * not known; token_enc_set_left) */
	int64_t comp_out;   /* compressed bytes sent (all files) */
	bool need_flush;    /* literal data went in since the last flush */
	bool run_pending;
	int32_t run_start, run_last, last_run_end;

	/* the current window (zadapt.h) */
	uint64_t win_in;      /* literal bytes of this file in the window */
	int64_t win_out0;     /* comp_out when the window began */
	uint64_t win_bytes;   /* literal bytes of all files in the window */
	uint64_t win_comp_ns;
	uint64_t win_wait0;   /* the output's wait_ns when the window began */
	uint64_t win_wall0;   /* the wall clock when the window began */
	uint64_t idle_ns;     /* the compressor thread's waits for the sender's
			       * data inside a file (token_pipe.c), all told */
	uint64_t win_idle0;   /* idle_ns when the window began */
	int64_t spd_out0;     /* comp_out when the speed window began */
	bool win_backlog_known; /* win_q0 was read (wire_out_backlog) */
	struct sendq_state win_q0; /* the output's queue when it began */
	uint64_t win_buffered0;    /* and ferry's own buffered bytes */
	uint8_t *sample;      /* while storing: the window's last bytes */
	size_t sample_len;
	uint8_t *sample_z;    /* the sample, compressed */

	/* zlib, zlibx */
	z_stream z;
	bool z_ready;
	int z_level;        /* the level deflate runs at now */
	uint8_t *pend;      /* compressed bytes not sent yet */
	size_t pend_len;
	bool marker_held;   /* pend ends with a mid-data flush's sync marker */

	/* zstd */
	ZSTD_CCtx *zc;
	int zs_level;
	bool zs_wide;       /* zadapt's wide mode: a long window, long-distance matching */
	bool zs_frame_open; /* data went into the current frame */
	bool zs_raw;        /* storing: raw blocks in frames of our own */
	bool zs_raw_open;   /* one of those frames is open */
	uint8_t *zs_block;  /* storing: the Raw block being gathered */
	size_t zs_block_len;
	size_t zs_opos;     /* output gathered in obuf for the next chunk */
	uint64_t zs_in0, zs_out0; /* zstd_progress when the window began */

	uint8_t *obuf;      /* a chunk: 2 header bytes + payload */
};

struct token_dec {
	const struct token_codec *codec;
	int alg, protocol;
	struct wire_error *err;

	int32_t count;      /* blocks in this file */
	int32_t rx_token;   /* the last block returned */
	int32_t run_left;   /* blocks of a run still to return */
	int64_t residue;    /* uncompressed: literal bytes still to read */

	uint8_t *cbuf;      /* a compressed chunk */
	uint8_t *dbuf;      /* decompressed output */
	size_t dcap;

	/* zlib, zlibx */
	z_stream z;
	bool z_ready;
	bool z_inflating;   /* input or output may be pending in inflate */
	bool z_data;        /* data came since the last sync marker */

	/* zstd */
	ZSTD_DCtx *zd;
	ZSTD_inBuffer zin;
	bool zs_inflating;
};

/*
 * One compressor: what the common stream code (token.c) asks of it. An
 * operation left NULL has nothing to do for that algorithm.
 */
struct token_codec {
	int alg;            /* CPRES_* */
	const char *name;   /* as negotiated and as --compress-choice takes it */

	/* The level to run at for a requested one (TOKEN_LEVEL_DEFAULT: the
	 * default); TOKEN_LEVEL_OFF where that level means no compression. */
	int (*resolve_level)(int level);
	/* Is `setting` the one with no compression effort? */
	bool (*is_store)(int setting);

	/* the encoder */
	bool (*enc_init)(struct token_enc *e, int level); /* false: e->err set */
	void (*enc_free)(struct token_enc *e);
	/* a new file, at `setting` */
	bool (*enc_begin)(struct token_enc *e, struct wire_out *out, int setting);
	/* literal data in */
	bool (*compress)(struct token_enc *e, struct wire_out *out, const uint8_t *p, size_t n);
	/* all literal data so far out, before a token or the end of a file */
	bool (*flush)(struct token_enc *e, struct wire_out *out);
	/* run at `setting` from here on, in the middle of a file */
	bool (*set_level)(struct token_enc *e, struct wire_out *out, int setting);
	/* the window's input and output (zadapt.h); *evidence false: too
	 * little compressed yet to judge. NULL: the counts token.c keeps. */
	bool (*window_data)(struct token_enc *e, struct wire_out *out, struct zadapt_window *w,
			    bool *evidence);
	/* a data window starts (the codec's own counters) */
	void (*window_start)(struct token_enc *e);
	/* a matched block the receiver puts into its history too */
	bool (*enc_block)(struct token_enc *e, const uint8_t *data, size_t len);

	/* the decoder */
	size_t (*dec_cap)(void);               /* its output buffer (NULL: 64 KiB) */
	bool (*dec_init)(struct token_dec *d); /* false: d->err set */
	void (*dec_free)(struct token_dec *d);
	void (*dec_begin)(struct token_dec *d);
	void (*dec_reset)(struct token_dec *d); /* back to dec_init's state */
	int (*next)(struct token_dec *d, struct wire_in *in, const uint8_t **data, size_t *len,
		    int32_t *block);
	/* a matched block's bytes into the decompressor's history */
	bool (*dec_see)(struct token_dec *d, const uint8_t *p, size_t n, size_t off,
			size_t blk_len);
};

#define TOKEN_LEVEL_OFF INT32_MAX

extern const struct token_codec token_codec_zlib, token_codec_zlibx, token_codec_zstd,
	token_codec_lz4;

/* Shared by token.c and the codecs (token_chunk.c). */
/* A compression failure: sets e->err (RERR_STREAMIO); returns false. */
bool tok_enc_fail(struct token_enc *e, const char *what, long code);
/* One DEFLATED_DATA chunk of n <= TOKEN_MAX_DATA bytes out. */
bool tok_put_chunk(struct token_enc *e, struct wire_out *out, const uint8_t *p, size_t n);
/* A decompression failure: sets d->err; returns TOKEN_ERROR. */
int tok_dec_fail(struct token_dec *d, const char *fmt, long v);

/* What tok_dec_next_chunk found next in a compressed stream. */
enum tok_next {
	TOK_NEXT_ERROR = -1, /* recorded in d->err */
	TOK_NEXT_CHUNK = 0,  /* *chunk, *n: a DEFLATED_DATA payload (maybe empty),
			      * valid until the next read */
	TOK_NEXT_FLAG = 1,   /* *flag: END_FLAG or a token flag, still to
			      * be taken by tok_dec_token */
};
/* Read the next flag byte and, for DEFLATED_DATA, its chunk: the step
 * every decoder takes when its compressor has nothing left to give. */
int tok_dec_next_chunk(struct token_dec *d, struct wire_in *in, uint8_t *flag,
		       const uint8_t **chunk, size_t *n);
/* A flag tok_dec_next_chunk returned: TOKEN_END for END_FLAG, else the
 * block it names (tok_dec_flag). */
int tok_dec_token(struct token_dec *d, struct wire_in *in, uint8_t flag, int32_t *block);

#endif
