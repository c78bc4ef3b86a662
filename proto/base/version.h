/*
 * ferry's version, as --version, the closing line, a daemon's log and
 * --json say it.
 */
#ifndef FERRY_PROTO_VERSION_H
#define FERRY_PROTO_VERSION_H

#define FERRY_VERSION "0.1.0"

#endif
