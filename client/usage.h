/*
 * The help and version text (client/usage.c). The parser only records
 * what an informational option asked for (ferry_opts.print_request); the
 * text is the command-line front end's, printed here.
 */
#ifndef FERRY_USAGE_H
#define FERRY_USAGE_H

#include <stdbool.h>
#include <stdio.h>

#include "proto/base/opts.h"

/* Print what o->print_request names, where rsync prints it: the daemon
 * help on stdout, the rest on stdout or, with --msgs2stderr, stderr.
 * Nothing for OPTS_PRINT_NONE. */
void usage_print_request(const struct ferry_opts *o);

/* rsync's --help layout (version header, usage forms, options), with only
 * the supported options in the main list and the others named in a short
 * "Recognised but not supported yet" section. */
void usage_print_help(FILE *f);
/* The daemon-mode help ("ferry --daemon --help"); its usage line names
 * the program as it was invoked. */
void usage_print_daemon_help(FILE *f);
/* rsync's --version layout: version line, capabilities, lists, warranty. */
void usage_print_version(FILE *f);
/* -VV: the same as JSON, in rsync 3.2+'s structure (program, version,
 * protocol, copyright, capabilities, optimizations, checksum_list,
 * compress_list, daemon_auth_list, license, caveat). */
void usage_print_version_json(FILE *f);
/* --info=help / --debug=help listings. */
void usage_print_output_words(FILE *f, bool debug);

#endif
