# ferry: an rsync-compatible file sync client and daemon.
# `make` builds ./ferry; `make check` installs what the tests need, builds, and
# runs the unit and interop suites twice (plain and under ASan+UBSan).

PREFIX  ?= /usr/local
DESTDIR ?=
CC      ?= cc

PKGS    := libmd libbsd-overlay libxxhash libzstd liblz4 zlib libssh
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN    := -Wall -Wextra -Werror -Wno-unused-parameter
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -D_FILE_OFFSET_BITS=64 $(WARN) -I. $(PKG_CFLAGS)
OPT     ?= -O2 -g
SAN     :=
BUILD   ?= build/release

CFLAGS_ALL = $(BASE_CFLAGS) $(OPT) $(SAN) $(CFLAGS)
LDLIBS_ALL = $(PKG_LIBS) -lpthread $(LDLIBS)

LIB_SRCS  := $(sort $(wildcard proto/*.c client/*.c daemon/*.c))
LIB_SRCS  := $(filter-out client/main.c,$(LIB_SRCS))
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/%.o)
MAIN_OBJ  := $(BUILD)/client/main.o
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all ferry deps check check-asan unit run install clean bench bench-quick bench-deps \
        fuzz fuzz-deps fuzz-run

all: ferry

ferry: $(BUILD)/ferry
	@if [ "$(BUILD)" = build/release ]; then cp -f $(BUILD)/ferry ./ferry; fi

$(BUILD)/ferry: $(MAIN_OBJ) $(BUILD)/libferry.a
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)

$(BUILD)/libferry.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libferry.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(BUILD)/libferry.a $(LDLIBS_ALL) -lcmocka

unit: $(UNIT_BINS) $(BUILD)/tests/test_fuzz_replay

# The fuzz harnesses (tests/fuzz/fuzz_<name>.c), linked with libFuzzer by
# `make fuzz`, and with tests/fuzz/replay.c into one cmocka binary that
# replays their corpora in every unit build (make check, both passes).
FUZZ_SRCS   := $(filter-out tests/fuzz/fuzz_common.c,$(sort $(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_NAMES  := $(FUZZ_SRCS:tests/fuzz/fuzz_%.c=%)
FUZZ_HDRS   := $(wildcard tests/fuzz/*.h)
REPLAY_OBJS := $(FUZZ_NAMES:%=$(BUILD)/tests/fuzz/replay_%.o) $(BUILD)/tests/fuzz/fuzz_common.o

$(BUILD)/tests/fuzz/replay_%.o: tests/fuzz/fuzz_%.c $(FUZZ_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -DLLVMFuzzerTestOneInput=fuzz_one_$* -c -o $@ $<

$(BUILD)/tests/test_fuzz_replay: tests/fuzz/replay.c $(REPLAY_OBJS) $(BUILD)/libferry.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(REPLAY_OBJS) $(BUILD)/libferry.a $(LDLIBS_ALL) -lcmocka

-include $(LIB_OBJS:.o=.d) $(MAIN_OBJ:.o=.d)

# ---- fuzzing (issue 22; README "Fuzzing") ----
# `make fuzz`: build/fuzz/fuzz_<name>, clang with libFuzzer, ASan and
# UBSan; the library is built again with clang under build/fuzz/obj.
# `make fuzz-run FUZZ_SECONDS=N`: each target in turn for N seconds.
FUZZ_CC      ?= clang
FUZZ_DIR     := build/fuzz
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_DEPS    := clang libclang-rt-14-dev
FUZZ_SECONDS ?= 60

fuzz-deps:
	@missing=""; for p in $(BUILD_DEPS) $(FUZZ_DEPS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "make fuzz-deps: need root to install:$$missing" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	fi

fuzz: fuzz-deps
	$(MAKE) BUILD=$(FUZZ_DIR)/obj CC=$(FUZZ_CC) OPT="-O1 -g -fno-omit-frame-pointer" \
	  SAN="$(FUZZ_SAN) -fsanitize=fuzzer-no-link" $(FUZZ_NAMES:%=$(FUZZ_DIR)/fuzz_%)

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_HDRS) $(BUILD)/tests/fuzz/fuzz_common.o $(BUILD)/libferry.a
	$(CC) $(CFLAGS_ALL) -fsanitize=fuzzer -o $@ $< $(BUILD)/tests/fuzz/fuzz_common.o \
	  $(BUILD)/libferry.a $(LDLIBS_ALL)

fuzz-run: fuzz
	tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_NAMES)

# Build and test dependencies, Debian 12 package names. Only what is missing
# is installed, so a second run costs one dpkg-query.
BUILD_DEPS := gcc make pkg-config libssh-dev zlib1g-dev libxxhash-dev libbsd-dev \
              libmd-dev libzstd-dev liblz4-dev libcmocka-dev
TEST_DEPS  := rsync openssh-server openssh-client python3 procps iproute2 strace \
              postgresql postgresql-contrib acl attr

deps:
	@missing=""; for p in $(BUILD_DEPS) $(TEST_DEPS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "make deps: need root to install:$$missing" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	fi

check: deps
	$(MAKE) all unit
	$(MAKE) BUILD=build/asan OPT="-O1 -g -fno-omit-frame-pointer" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined" unit build/asan/ferry
	tests/check.sh build/release build/asan

check-asan: deps
	$(MAKE) BUILD=build/asan OPT="-O1 -g -fno-omit-frame-pointer" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined" unit build/asan/ferry
	tests/check.sh build/asan

run: deps all
	@FERRY_PORT=$${FERRY_PORT:-8873}; FERRY_ROOT=$${FERRY_ROOT:-$$(pwd)}; \
	echo "ferry daemon: module 'files' serving $$FERRY_ROOT on 127.0.0.1:$$FERRY_PORT"; \
	echo "connect with:  rsync rsync://127.0.0.1:$$FERRY_PORT/files/"; \
	FERRY_ROOT=$$FERRY_ROOT exec ./ferry --daemon --no-detach --config=@default \
	  --address=127.0.0.1 --port=$$FERRY_PORT

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5
	install -m 755 ferry $(DESTDIR)$(PREFIX)/bin/ferry
	install -m 644 man/ferry.1 $(DESTDIR)$(PREFIX)/share/man/man1/ferry.1
	install -m 644 man/ferryd.conf.5 $(DESTDIR)$(PREFIX)/share/man/man5/ferryd.conf.5
	install -d $(DESTDIR)$(PREFIX)/lib/ferry
	install -m 644 contrib/ferry_pg_mirror.py $(DESTDIR)$(PREFIX)/lib/ferry/ferry_pg_mirror.py
	-python3 -m compileall -q $(DESTDIR)$(PREFIX)/lib/ferry
	install -m 755 contrib/ferry-pg-mirror $(DESTDIR)$(PREFIX)/bin/ferry-pg-mirror
	install -m 644 man/ferry-pg-mirror.1 $(DESTDIR)$(PREFIX)/share/man/man1/ferry-pg-mirror.1

clean:
	rm -rf build ferry

# Benchmarks against rsync (issue 8): see README "Benchmarks" and bench/run.py.
# bench-deps installs Debian's PostgreSQL (for the pgdata dataset and
# pg_basebackup) only when its binaries are missing.
BENCH_DEPS := postgresql postgresql-contrib

bench-deps:
	@if ls /usr/lib/postgresql/*/bin/pgbench /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" != 0 ]; then echo "make bench-deps: need root to install: $(BENCH_DEPS)" >&2; exit 1; \
	else echo "installing: $(BENCH_DEPS)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(BENCH_DEPS) >/dev/null || exit 1; \
	fi

bench: deps bench-deps all
	/usr/bin/python3 bench/run.py

bench-quick: deps bench-deps all
	/usr/bin/python3 bench/run.py --quick
