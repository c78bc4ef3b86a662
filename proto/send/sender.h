/*
 * The sending role (sender.c): answering the generator's requests with
 * delta data, then the end of the transfer. The list it sends from is the
 * file-list layer's (proto/flist/sendside.h).
 */
#ifndef FERRY_SENDER_H
#define FERRY_SENDER_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/core/session.h"
#include "proto/flist/sendside.h"

struct sum_head;

/* The generator's sum head and block sums as the sender reads them, with
 * every bound the sender applies, but no file hashed ahead (fuzzing and
 * tests). *sum1 and *sum2 get h->count weak sums and strong-sum prefixes
 * (NULL when there are none); the caller frees both, also after a
 * failure, which the session error explains. */
bool sender_read_sums(struct session *s, struct sum_head *h, uint32_t **sum1, uint8_t **sum2);

/* Answer the generator's requests until the end of the phases
 * (sender.c: send_files). */
bool sender_run(struct session *s, struct send_list *sl);

/* After send_files: the server's statistics and the goodbye
 * (main.c: handle_stats, read_final_goodbye). */
bool sender_finish(struct session *s);

#endif
