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

LIB_SRCS  := $(sort $(wildcard proto/*/*.c client/*.c daemon/*.c))
LIB_SRCS  := $(filter-out client/main.c,$(LIB_SRCS))
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/%.o)
MAIN_OBJ  := $(BUILD)/client/main.o
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all ferry deps check check-asan layers-check unit run install uninstall clean deps-build deb bench \
        bench-quick bench-deps fuzz fuzz-deps fuzz-run stress

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

# The engine tests (test_engine_*.c) run whole transfers in-process with
# tests/unit/engine_harness.c.
ENGINE_HARNESS := tests/unit/engine_harness.c tests/unit/engine_harness.h

$(BUILD)/tests/test_engine_%: tests/unit/test_engine_%.c $(ENGINE_HARNESS) $(BUILD)/libferry.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $< tests/unit/engine_harness.c $(BUILD)/libferry.a $(LDLIBS_ALL) -lcmocka

# Helpers shared by the files of one split test (test_NAME*.c).
$(UNIT_BINS): $(wildcard tests/unit/*_util.h)

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
	$(CC) $(CFLAGS_ALL) -DLLVMFuzzerTestOneInput=fuzz_one_$* -MMD -MP -c -o $@ $<

$(BUILD)/tests/test_fuzz_replay: tests/fuzz/replay.c $(REPLAY_OBJS) $(BUILD)/libferry.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $< $(REPLAY_OBJS) $(BUILD)/libferry.a $(LDLIBS_ALL) -lcmocka

-include $(LIB_OBJS:.o=.d) $(MAIN_OBJ:.o=.d) $(REPLAY_OBJS:.o=.d)

# ---- fuzzing (issue 22; README "Fuzzing") ----
# `make fuzz`: build/fuzz/fuzz_<name>, clang with libFuzzer, ASan and
# UBSan; the library is built again with clang under build/fuzz/obj.
# `make fuzz-run FUZZ_SECONDS=N`: each target in turn for N seconds;
# `make fuzz-run FUZZ_RUNS=N`: each until it has run N inputs (with no time
# limit unless FUZZ_SECONDS is given too).
FUZZ_CC      ?= clang
FUZZ_DIR     := build/fuzz
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_DEPS    := clang libclang-rt-14-dev
FUZZ_SECONDS ?= 60
# 64 KB stream buffers: ASan's size-class allocator serves them, where a
# 256 KB one is an mmap and munmap per input (wire.c); incremental lists
# reserve room for 1 M entries, not 16 M (flist.h: INC_MAX_FILES), which
# makes the reservations' munmap per input cheaper; no input comes near
# either bound. Objects do not track these flags: rm -rf build/fuzz/obj
# after changing them.
FUZZ_DEFS    := -DWIRE_IN_CAP=65536 -DWIRE_OUT_CAP=65536 -DINC_MAX_FILES=1048576

fuzz-deps: deps-build
	@missing=""; for p in $(FUZZ_DEPS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "make fuzz-deps: need root to install:$$missing" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	fi

fuzz: fuzz-deps
	$(MAKE) BUILD=$(FUZZ_DIR)/obj CC=$(FUZZ_CC) OPT="-O1 -g -fno-omit-frame-pointer $(FUZZ_DEFS)" \
	  SAN="$(FUZZ_SAN) -fsanitize=fuzzer-no-link" $(FUZZ_NAMES:%=$(FUZZ_DIR)/fuzz_%)

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_HDRS) $(BUILD)/tests/fuzz/fuzz_common.o $(BUILD)/libferry.a
	$(CC) $(CFLAGS_ALL) -fsanitize=fuzzer -o $@ $< $(BUILD)/tests/fuzz/fuzz_common.o \
	  $(BUILD)/libferry.a $(LDLIBS_ALL)

fuzz-run: fuzz
	FUZZ_RUNS=$(FUZZ_RUNS) tests/fuzz/run.sh \
	  $(if $(and $(FUZZ_RUNS),$(filter file default,$(origin FUZZ_SECONDS))),0,$(FUZZ_SECONDS)) \
	  $(FUZZ_NAMES)

# Build and test dependencies, Debian 12 package names (the lists and the
# probes are in build-aux/deps.sh). Only what is missing is installed; a
# library pkg-config finds counts as present even where dpkg-query is not.
# `make run` needs only the build half; `make check` needs everything.
deps:
	@sh build-aux/deps.sh test

deps-build:
	@sh build-aux/deps.sh build

check: deps layers-check
	$(MAKE) all unit
	$(MAKE) BUILD=build/asan OPT="-O1 -g -fno-omit-frame-pointer" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined" unit build/asan/ferry
	tests/check.sh build/release build/asan

# No file includes a header from a layer above its own (the order is in
# the script; docs/ARCHITECTURE.md, "The layers inside proto/").
layers-check:
	@sh build-aux/layers-check.sh

check-asan: deps
	$(MAKE) BUILD=build/asan OPT="-O1 -g -fno-omit-frame-pointer" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined" unit build/asan/ferry
	tests/check.sh build/asan

run: deps-build
	@# A new make: pkg-config is read when the Makefile is, before deps-build.
	@$(MAKE) --no-print-directory all
	@FERRY_PORT=$${FERRY_PORT:-8873}; FERRY_ROOT=$${FERRY_ROOT:-$$(pwd)}; \
	echo "ferry daemon: module 'files' serving $$FERRY_ROOT on 127.0.0.1:$$FERRY_PORT"; \
	echo "connect with:  rsync rsync://127.0.0.1:$$FERRY_PORT/files/"; \
	FERRY_ROOT=$$FERRY_ROOT exec ./ferry --daemon --no-detach --config=@default \
	  --address=127.0.0.1 --port=$$FERRY_PORT

# Installed files. The units name $(PREFIX)/bin/ferry in place of the
# /usr/local/bin/ferry they carry in contrib/; systemd reads units from
# /usr/local/lib/systemd/system as well as /usr/lib/systemd/system.
SYSTEMD_UNIT_DIR ?= $(PREFIX)/lib/systemd/system
UNITS   := ferryd.service ferryd.socket ferryd-inetd@.service ferryd-inetd.socket
DOC_DIR := $(PREFIX)/share/doc/ferry
PY_DIR  := $(PREFIX)/lib/ferry

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5
	install -m 755 ferry $(DESTDIR)$(PREFIX)/bin/ferry
	install -m 644 man/ferry.1 $(DESTDIR)$(PREFIX)/share/man/man1/ferry.1
	install -m 644 man/ferryd.conf.5 $(DESTDIR)$(PREFIX)/share/man/man5/ferryd.conf.5
	install -d $(DESTDIR)$(PY_DIR)
	install -m 644 contrib/ferry_pg_mirror.py $(DESTDIR)$(PY_DIR)/ferry_pg_mirror.py
	@# -d: the byte code names the installed path, not the DESTDIR staging one.
	-python3 -m compileall -q -d $(PY_DIR) $(DESTDIR)$(PY_DIR)
	install -m 755 contrib/ferry-pg-mirror $(DESTDIR)$(PREFIX)/bin/ferry-pg-mirror
	install -m 644 man/ferry-pg-mirror.1 $(DESTDIR)$(PREFIX)/share/man/man1/ferry-pg-mirror.1
	install -d $(DESTDIR)$(SYSTEMD_UNIT_DIR)
	for u in $(UNITS); do \
	  sed 's|/usr/local/bin/|$(PREFIX)/bin/|g' contrib/$$u > $(DESTDIR)$(SYSTEMD_UNIT_DIR)/$$u && \
	  chmod 644 $(DESTDIR)$(SYSTEMD_UNIT_DIR)/$$u || exit 1; \
	done
	install -d $(DESTDIR)$(DOC_DIR)
	install -m 644 contrib/ferryd.conf $(DESTDIR)$(DOC_DIR)/ferryd.conf.example

# Removes what install put there, and the directories only ferry uses.
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/ferry $(DESTDIR)$(PREFIX)/bin/ferry-pg-mirror
	rm -f $(DESTDIR)$(PREFIX)/share/man/man1/ferry.1 $(DESTDIR)$(PREFIX)/share/man/man1/ferry-pg-mirror.1
	rm -f $(DESTDIR)$(PREFIX)/share/man/man5/ferryd.conf.5
	rm -f $(DESTDIR)$(PY_DIR)/ferry_pg_mirror.py $(DESTDIR)$(PY_DIR)/__pycache__/ferry_pg_mirror.*.pyc
	-rmdir $(DESTDIR)$(PY_DIR)/__pycache__ $(DESTDIR)$(PY_DIR)
	rm -f $(addprefix $(DESTDIR)$(SYSTEMD_UNIT_DIR)/,$(UNITS))
	rm -f $(DESTDIR)$(DOC_DIR)/ferryd.conf.example
	-rmdir $(DESTDIR)$(DOC_DIR)

# A Debian package (debian/, debhelper) built from a copy of the tree in
# $(DEB_DIR)/src, so the package build's clean step cannot touch build/ here;
# the .deb lands in $(DEB_DIR). Needs debhelper (make deps installs it).
DEB_DIR ?= build/deb
deb:
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/src
	tar -cf - --exclude=./build --exclude=./.git --exclude=./ferry --exclude=./bench/scratch \
	  --exclude=./tests/tmp --exclude=__pycache__ . | \
	  tar -xf - -C $(DEB_DIR)/src
	cd $(DEB_DIR)/src && dpkg-buildpackage -us -uc

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

# BENCH_LINK=100mbit|1gbit|10gbit: the same tools over an emulated link
# instead (issue 24; root: a network namespace and tc), see bench/link.py;
# its BENCH_* knobs reach it through the environment (make exports
# variables given on its command line).
bench: deps bench-deps all
ifeq ($(strip $(BENCH_LINK)),)
	/usr/bin/python3 bench/run.py
else
	/usr/bin/python3 bench/link.py --link '$(BENCH_LINK)'
endif

bench-quick: deps bench-deps all
	/usr/bin/python3 bench/run.py --quick

# Load and fault runs (issue 22), too long for `make check`: 10,000
# sequential daemon connections (fds and RSS steady) and 50 kill -9 rounds
# of transfers (never a partial file). See README "Stress".
stress: deps all
	tests/stress/run $(BUILD)
