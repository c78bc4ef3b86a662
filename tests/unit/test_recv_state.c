/*
 * The receiver's per-index state of an incremental list whose parts are
 * released (recv_release_state, issue 22): the state of released entries
 * goes back to the kernel, and the state of each released part's
 * directory, which the end of the run still reads (touch_up_dirs), is
 * kept.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto/core/flist.h"
#include "proto/recv/recvside.h"

#define PART_FILES 100000

/* Three parts of PART_FILES, PART_FILES and 10 entries, each after the
 * gap index that names its directory. */
static void setup_list(struct flist *fl, struct flist_part *parts)
{
	memset(fl, 0, sizeof *fl);
	fl->inc = true;
	fl->parts = parts;
	fl->nparts = 3;
	int32_t start = 1;
	int32_t counts[3] = {PART_FILES, PART_FILES, 10};
	for (size_t k = 0; k < 3; k++) {
		parts[k].ndx_start = start;
		parts[k].count = counts[k];
		start += counts[k] + 1;
	}
}

static void test_released_state_given_back_dir_state_kept(void **state)
{
	struct flist_part parts[3];
	struct flist fl;
	struct recv_ctx rc;

	(void)state;
	setup_list(&fl, parts);
	memset(&rc, 0, sizeof rc);
	rc.fl = &fl;
	pthread_mutex_init(&rc.lock, NULL);
	rc.state = flist_inc_state_new();
	assert_non_null(rc.state);

	size_t gap1 = (size_t)parts[1].ndx_start - 1, gap2 = (size_t)parts[2].ndx_start - 1;
	recv_state_add(&rc, gap1, FS_FAILED);      /* part 1's directory failed */
	recv_state_add(&rc, 5, FS_DONE);           /* a file of part 0 */
	recv_state_add(&rc, gap1 + 50000, FS_DONE); /* a file of part 1 */
	recv_state_add(&rc, gap2, FS_FAILED);      /* part 2's directory */

	/* the sender is done with parts 0 and 1 */
	fl.released = 2;
	fl.released_slots = gap2;
	recv_release_state(&rc);

	/* the directories' states read the same, released or not */
	assert_int_equal(recv_part_dir_state(&rc, 0), 0);
	assert_int_equal(recv_part_dir_state(&rc, 1), FS_FAILED);
	assert_int_equal(recv_part_dir_state(&rc, 2), FS_FAILED);
	/* whole 128 KiB steps below the released slots went back: they
	 * read as zeros; the rest is untouched */
	assert_true(rc.state_given > 0 && rc.state_given <= gap2);
	assert_int_equal(recv_state(&rc, 5), 0);
	assert_int_equal(recv_state(&rc, gap1), 0);
	assert_true(gap1 + 50000 >= rc.state_given);
	assert_int_equal(recv_state(&rc, gap1 + 50000), FS_DONE);
	assert_int_equal(recv_state(&rc, gap2), FS_FAILED);

	/* a second call with nothing more released changes nothing */
	recv_release_state(&rc);
	assert_int_equal(recv_part_dir_state(&rc, 1), FS_FAILED);
	assert_int_equal(rc.part_dir_saved, 2);

	flist_inc_state_free(rc.state);
	free(rc.part_dir_state);
	pthread_mutex_destroy(&rc.lock);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_released_state_given_back_dir_state_kept),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
