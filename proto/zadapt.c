/*
 * ferry's adaptive compression rule (see zadapt.h for the rule itself).
 */
#include "proto/zadapt.h"

#include <string.h>

#include "proto/token.h"

/* Faster settings tried below the normal level, fastest last; the store
 * rung is appended after them. zstd's negative levels and lz4's
 * accelerations trade ratio for speed; zlib levels 1-3 use deflate's fast
 * matcher, 4-9 the lazy one. */
static const int zstd_steps[] = {1, -1, -4, -10};
static const int zlib_steps[] = {3, 1};
static const int lz4_steps[] = {4, 16, 64};

static void add_rung(struct zadapt *z, int setting)
{
	if (z->nrungs < ZADAPT_MAX_RUNGS)
		z->rungs[z->nrungs++] = setting;
}

void zadapt_init(struct zadapt *z, int alg, int level, bool adaptive, int zstd_min)
{
	const int *steps = NULL;
	size_t nsteps = 0;
	int store = 0;

	memset(z, 0, sizeof *z);
	z->alg = alg;
	z->adaptive = adaptive;
	z->backoff = 2;
	switch (alg) {
	case CPRES_ZSTD:
		steps = zstd_steps, nsteps = sizeof zstd_steps / sizeof *zstd_steps;
		store = zstd_min;
		break;
	case CPRES_ZLIB:
	case CPRES_ZLIBX:
		steps = zlib_steps, nsteps = sizeof zlib_steps / sizeof *zlib_steps;
		store = 0;
		break;
	case CPRES_LZ4:
		level = 1; /* acceleration */
		steps = lz4_steps, nsteps = sizeof lz4_steps / sizeof *lz4_steps;
		store = 0; /* literal-only blocks */
		break;
	default:
		break;
	}
	add_rung(z, level);
	for (size_t i = 0; i < nsteps; i++) {
		bool faster = alg == CPRES_LZ4 ? steps[i] > level : steps[i] < level;
		if (faster)
			add_rung(z, steps[i]);
	}
	if (alg != CPRES_NONE && z->rungs[z->nrungs - 1] != store)
		add_rung(z, store);
}

void zadapt_file_begin(struct zadapt *z)
{
	z->incompressible = false;
}

int zadapt_setting(const struct zadapt *z)
{
	if (z->incompressible)
		return z->rungs[z->nrungs - 1];
	return z->rungs[z->rung];
}

bool zadapt_storing(const struct zadapt *z)
{
	return z->nrungs > 1 && (z->incompressible || z->rung == z->nrungs - 1);
}

/* The data side: store what does not compress, resume when a sample
 * compresses again. Returns true if the decision changed. */
static bool judge_data(struct zadapt *z, const struct zadapt_window *w)
{
	if (!z->incompressible) {
		/* only a window that was really compressed tells us anything */
		if (z->rung == z->nrungs - 1 || w->in == 0)
			return false;
		if (w->out * 100 > w->in * ZADAPT_INCOMPRESSIBLE_PCT) {
			z->incompressible = true;
			return true;
		}
		return false;
	}
	if (w->sample_in && w->sample_out * 100 < w->sample_in * ZADAPT_COMPRESSIBLE_PCT) {
		z->incompressible = false;
		return true;
	}
	return false;
}

/* The speed side: compare compressing with waiting for the link. */
static bool judge_speed(struct zadapt *z, const struct zadapt_window *w)
{
	/* fast enough for any link: lowering the level gains nothing and
	 * costs a new zstd frame or deflate level (see zadapt.h) */
	bool fast = w->comp_ns * 1048576u < w->bytes * (uint64_t)ZADAPT_FAST_NS_PER_MIB;
	bool cpu_bound = !fast && w->comp_ns > ZADAPT_MIN_NS &&
			 w->comp_ns > (uint64_t)ZADAPT_CPU_BOUND * w->wait_ns;
	bool link_bound = w->wait_ns > ZADAPT_MIN_NS &&
			  w->wait_ns > (uint64_t)ZADAPT_LINK_BOUND * w->comp_ns;

	if (cpu_bound && z->rung < z->nrungs - 1) {
		if (z->last_up) /* the last step up did not pay: wait longer next time */
			z->backoff = z->backoff * 2 > ZADAPT_MAX_HOLD ? ZADAPT_MAX_HOLD
								  : z->backoff * 2;
		z->rung++;
		if (w->comp_ns > (uint64_t)ZADAPT_CPU_FAR * w->wait_ns && z->rung < z->nrungs - 1)
			z->rung++;
		z->last_up = false;
		z->hold = z->backoff;
		return true;
	}
	if (link_bound && z->rung > 0) {
		if (z->hold > 0) {
			z->hold--;
			return false;
		}
		z->rung--;
		z->last_up = true;
		return true;
	}
	if (!cpu_bound && !link_bound && z->last_up && z->hold == 0) {
		/* a step up that held: the link really is the limit */
		z->last_up = false;
		if (z->backoff > 2)
			z->backoff /= 2;
	}
	if (z->hold > 0 && !cpu_bound)
		z->hold--;
	return false;
}

bool zadapt_window_end(struct zadapt *z, const struct zadapt_window *w)
{
	if (!z->adaptive || z->nrungs < 2)
		return false;
	int before = zadapt_setting(z);
	judge_data(z, w);
	if (!z->incompressible && w->timed)
		judge_speed(z, w);
	if (zadapt_setting(z) == before)
		return false;
	z->changes++;
	return true;
}
