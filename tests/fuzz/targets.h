/*
 * Every harness tests/fuzz/fuzz_<name>.c, for the corpus replay
 * (replay.c). The replay test fails when a harness or a corpus directory
 * is missing here, so a new target cannot go unreplayed.
 */
#define FUZZ_TARGETS(X)                                                                   \
	X(acl)                                                                            \
	X(batch)                                                                          \
	X(config)                                                                         \
	X(daemon)                                                                         \
	X(daemon_client)                                                                  \
	X(filesfrom)                                                                      \
	X(filter)                                                                         \
	X(flist)                                                                          \
	X(mux)                                                                            \
	X(proxy)                                                                          \
	X(sums)                                                                           \
	X(token_lz4)                                                                      \
	X(token_plain)                                                                    \
	X(token_zlib)                                                                     \
	X(token_zlibx)                                                                    \
	X(token_zstd)                                                                     \
	X(wildmatch)                                                                      \
	X(xattr)
