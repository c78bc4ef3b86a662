/*
 * Shared between daemon/config.c (the parser) and daemon/config_params.c
 * (the parameter table and value handling). Not for other users.
 */
#ifndef FERRY_DAEMON_CONFIG_PRIV_H
#define FERRY_DAEMON_CONFIG_PRIV_H

#include <stdbool.h>
#include <stddef.h>

#include "daemon/config.h"

/* rsync's strwiEQ: equal ignoring case and all blanks. */
bool cfg_name_eq(const char *a, const char *b);

/* Parse value for p and store it in the struct at base (a struct
 * daemon_config for a global-only parameter, else a struct daemon_module).
 * Non-string values are %VAR%-expanded first. Returns 0, or -1 with a
 * location-free message in why ("bad boolean ..."). */
int cfg_param_set(const struct config_param *p, void *base, const char *value, char *why,
		  size_t whysz);

/* Deep-copy, free, or default the parameters of one class (global-only ones
 * in a struct daemon_config, module ones in a struct daemon_module). Copy
 * overwrites dst without freeing it and returns -1 on out of memory (dst is
 * then freed). Free NULLs the strings it frees. */
int cfg_class_copy(bool global, void *dst, const void *src);
void cfg_class_free(bool global, void *base);
void cfg_class_defaults(bool global, void *base);

/* The string field of p in base (p must be a string type). */
char **cfg_str_field(const struct config_param *p, void *base);

#endif
