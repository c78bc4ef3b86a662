#!/bin/bash
# Issue 25, "systemd and install": the contrib/ units pass
# `systemd-analyze verify` and rate an exposure of at most 5.0; the daemon
# still chroots, switches uid and preserves owners inside the units'
# NoNewPrivileges and capability bounding set, listening (ferryd.service)
# and inetd-style (ferryd-inetd@.service); `make install` puts the
# units (with PREFIX in place of /usr/local/bin), the example config and
# byte code that does not name the DESTDIR staging path, and `make
# uninstall` takes exactly that away; `make deps` needs no dpkg-query where
# pkg-config finds the libraries, and `make run` asks for the build half
# only.
#
# systemd is not PID 1 in the test environment, so the units are not
# started for real; the sandbox's privilege part is emulated with setpriv
# (the syscall filter and mount namespaces are not).
. "$(dirname "$0")/lib.sh"
t_setup

CONTRIB=$FERRY_SRC/contrib
SERVICES="ferryd.service ferryd-inetd@.service"
UNITS="$SERVICES ferryd.socket ferryd-inetd.socket"
MAX_EXPOSURE=5.0

# ------------------------------------------------ verify and security score

# The units name /usr/local/bin/ferry, which need not exist here: verify a
# copy that names the ferry under test.
mkdir -p "$T/units"
for u in $UNITS; do
    sed "s|/usr/local/bin/ferry|$FERRY|g" "$CONTRIB/$u" >"$T/units/$u"
done

if ! command -v systemd-analyze >/dev/null 2>&1; then
    t_skip units_verify "systemd-analyze not found"
    t_skip units_exposure "systemd-analyze not found"
else
    # shellcheck disable=SC2086 # UNITS is a list of names
    (cd "$T/units" && systemd-analyze verify --man=no $UNITS) >"$T/verify.out" 2>&1
    rc=$?
    cat "$T/verify.out"
    if [ "$rc" = 0 ] && [ ! -s "$T/verify.out" ]; then
        t_pass units_verify
    else
        t_fail units_verify "systemd-analyze verify: exit $rc, $(head -n 3 "$T/verify.out")"
    fi

    if ! systemd-analyze security --help 2>/dev/null | grep -q -- --offline; then
        t_skip units_exposure "systemd-analyze security has no --offline (systemd < 252)"
    else
        bad=""
        for u in $SERVICES; do
            score=$(systemd-analyze security --offline=yes "$T/units/$u" 2>&1 |
                sed -n 's/^.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
            echo "$u: exposure $score"
            if [ -z "$score" ] ||
                ! awk -v s="$score" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(s <= m) }'; then
                bad="$bad $u=${score:-none}"
            fi
        done
        if [ -z "$bad" ]; then
            t_pass units_exposure
        else
            t_fail units_exposure "exposure above $MAX_EXPOSURE:$bad"
        fi
    fi
fi

# What chroot and uid switching need must stay allowed however the rest is
# tightened: chroot(2) is outside @system-service, and the bounding set must
# keep the capabilities serve.c uses.
units_keep_privileges() {
    local u caps
    for u in $SERVICES; do
        grep -q '^NoNewPrivileges=yes' "$CONTRIB/$u" || { echo "$u: no NoNewPrivileges"; return 1; }
        grep -q '^SystemCallFilter=@system-service chroot' "$CONTRIB/$u" ||
            { echo "$u: chroot not in SystemCallFilter"; return 1; }
        caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$CONTRIB/$u" | tr '\n' ' ')
        for c in CAP_SYS_CHROOT CAP_SETUID CAP_SETGID CAP_CHOWN; do
            case " $caps " in *" $c "*) ;; *) echo "$u: $c missing"; return 1 ;; esac
        done
    done
    grep -q '^CapabilityBoundingSet=.*CAP_NET_BIND_SERVICE' "$CONTRIB/ferryd.service"
}
t_check units_keep_privileges units_keep_privileges

# ------------------------------- the daemon inside the units' privileges

# setpriv_caps UNIT -- the unit's CapabilityBoundingSet as a setpriv
# --bounding-set argument (-all,+sys_chroot,...).
setpriv_caps() {
    sed -n 's/^CapabilityBoundingSet=//p' "$1" | tr ' ' '\n' | sed -n 's/^CAP_//p' |
        tr '[:upper:]' '[:lower:]' | sed 's/^/+/' | paste -sd, | sed 's/^/-all,/'
}

# run_sandboxed_daemon CAPS -- t_ferryd_start with ferry under
# NoNewPrivileges and bounding set CAPS: module "pub" chroots and drops to
# nobody, module "up" chroots and receives as root.
run_sandboxed_daemon() {
    local caps=$1 real=$FERRY
    cat >"$T/ferry-sandboxed" <<EOF
#!/bin/sh
exec setpriv --no-new-privs --bounding-set=$caps "$real" "\$@"
EOF
    chmod +x "$T/ferry-sandboxed"
    FERRY=$T/ferry-sandboxed t_ferryd_start sandboxed "
[pub]
    path = $T/pub
    use chroot = yes
    uid = nobody
    gid = nogroup
[up]
    path = $T/up
    use chroot = yes
    numeric ids = yes
    read only = no
"
}

# A file owned by 12345:12345 pushed with -a arrives owned so, and a file
# nobody may read comes back readable only as root (so the pull did run
# as nobody).
sandbox_check() {
    rm -rf "$T/pub" "$T/up" "$T/src" "$T/got"
    mkdir -p "$T/pub" "$T/up" "$T/src" "$T/got" &&
        chmod 755 "$T/pub" "$T/up" &&
        echo public >"$T/pub/open" && chmod 644 "$T/pub/open" &&
        echo secret >"$T/pub/closed" && chmod 600 "$T/pub/closed" &&
        echo owned >"$T/src/owned" && chown 12345:12345 "$T/src/owned" || return 2
    run_sandboxed_daemon "$1" || return 2
    "$RSYNC" -a "rsync://127.0.0.1:$FERRYD_PORT/pub/" "$T/got/" >"$T/pull.out" 2>&1
    echo "pull: exit $?"
    "$RSYNC" -a --numeric-ids "$T/src/" "rsync://127.0.0.1:$FERRYD_PORT/up/" >"$T/push.out" 2>&1
    echo "push: exit $?"
    cat "$T/pull.out" "$T/push.out"
    t_ferryd_stop
    PULL_OPEN=$(cat "$T/got/open" 2>/dev/null)
    PULL_CLOSED=$([ -e "$T/got/closed" ] && echo yes || echo no)
    PUSH_OWNER=$(stat -c %u:%g "$T/up/owned" 2>/dev/null)
    echo "open=$PULL_OPEN closed=$PULL_CLOSED owner=$PUSH_OWNER"
}

if [ "$(id -u)" != 0 ]; then
    t_skip units_sandbox_chroot_uid "needs root (chroot, uid switching)"
elif ! command -v setpriv >/dev/null 2>&1; then
    t_skip units_sandbox_chroot_uid "setpriv not found"
elif ! getent passwd nobody >/dev/null || ! getent group nogroup >/dev/null; then
    t_skip units_sandbox_chroot_uid "no user nobody or group nogroup"
else
    sandbox_check "$(setpriv_caps "$CONTRIB/ferryd.service")"
    rc=$?
    if [ "$rc" = 2 ]; then
        t_fail units_sandbox_chroot_uid "could not set up or start the daemon"
    elif [ "$PULL_OPEN" = public ] && [ "$PULL_CLOSED" = no ] &&
        [ "$PUSH_OWNER" = 12345:12345 ]; then
        t_pass units_sandbox_chroot_uid
    else
        t_fail units_sandbox_chroot_uid \
            "open=$PULL_OPEN closed=$PULL_CLOSED owner=$PUSH_OWNER"
    fi
    # The control: without CAP_CHOWN the owner is not kept, so the check
    # above does measure the bounding set.
    sandbox_check "$(setpriv_caps "$CONTRIB/ferryd.service" | sed 's/,+chown//')"
    if [ -n "$PUSH_OWNER" ] && [ "$PUSH_OWNER" != 12345:12345 ]; then
        t_pass units_sandbox_control
    else
        t_fail units_sandbox_control "owner=$PUSH_OWNER without CAP_CHOWN"
    fi
fi

# ferryd-inetd@.service: systemd accepts, ferry serves the socket on
# stdin. A one-shot acceptor stands in for systemd; ferry runs with that
# unit's privileges (no CAP_NET_BIND_SERVICE) and must still chroot and
# drop to nobody.
inetd_check() {
    local caps pid port="" i
    caps=$(setpriv_caps "$CONTRIB/ferryd-inetd@.service")
    rm -rf "$T/inetd.port" "$T/got-inetd"
    "$PYTHON" - "$T/inetd.port" setpriv --no-new-privs --bounding-set="$caps" \
        "$FERRY" --daemon --config="$T/sandboxed.conf" >"$T/inetd.out" 2>&1 <<'EOF2' &
import os, socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
c, _ = s.accept()
s.close()
os.dup2(c.fileno(), 0)
os.dup2(c.fileno(), 1)
os.execvp(sys.argv[2], sys.argv[2:])
EOF2
    pid=$!
    t_track_pid "$pid"
    for i in $(seq 100); do
        [ -s "$T/inetd.port" ] && break
        sleep 0.1
    done
    port=$(cat "$T/inetd.port" 2>/dev/null)
    [ -n "$port" ] || return 2
    "$RSYNC" -a "rsync://127.0.0.1:$port/pub/" "$T/got-inetd/" >"$T/inetd-pull.out" 2>&1
    echo "inetd pull: exit $? after $i polls"
    cat "$T/inetd-pull.out" "$T/inetd.out"
    wait "$pid" 2>/dev/null
    _t_untrack_pid "$pid"
    [ "$(cat "$T/got-inetd/open" 2>/dev/null)" = public ] && [ ! -e "$T/got-inetd/closed" ]
}
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 && [ -f "$T/sandboxed.conf" ]; then
    t_check units_inetd_sandbox_chroot_uid inetd_check
else
    t_skip units_inetd_sandbox_chroot_uid "needs root, setpriv and the sandboxed daemon's config"
fi

# ----------------------------------------------------- install, uninstall

if [ ! -x "$FERRY_SRC/ferry" ]; then
    t_skip install_layout "no $FERRY_SRC/ferry (run make first)"
else
    STAGE=$T/stage
    # -o all: install what is built, never rebuild from inside a test.
    make -s -C "$FERRY_SRC" -o all install DESTDIR="$STAGE" PREFIX=/usr >"$T/install.out" 2>&1
    rc=$?
    cat "$T/install.out"
    tag=$("$PYTHON" -c 'import sys; print(sys.implementation.cache_tag)')
    sort >"$T/expected" <<EOF
./usr/bin/ferry
./usr/bin/ferry-pg-mirror
./usr/lib/ferry/__pycache__/ferry_pg_mirror.$tag.pyc
./usr/lib/ferry/ferry_pg_mirror.py
./usr/lib/systemd/system/ferryd-inetd.socket
./usr/lib/systemd/system/ferryd-inetd@.service
./usr/lib/systemd/system/ferryd.service
./usr/lib/systemd/system/ferryd.socket
./usr/share/doc/ferry/ferryd.conf.example
./usr/share/man/man1/ferry-pg-mirror.1
./usr/share/man/man1/ferry.1
./usr/share/man/man5/ferryd.conf.5
EOF
    (cd "$STAGE" 2>/dev/null && find . -type f | sort) >"$T/installed"
    if [ "$rc" = 0 ] && diff "$T/expected" "$T/installed"; then
        t_pass install_layout
    else
        t_fail install_layout "exit $rc; $(diff "$T/expected" "$T/installed" | tr '\n' ' ')"
    fi

    u=$STAGE/usr/lib/systemd/system
    if grep -q '^ExecStart=/usr/bin/ferry --daemon' "$u/ferryd.service" "$u/ferryd-inetd@.service" &&
        ! grep -l '/usr/local' "$u"/*; then
        t_pass install_units_prefix
    else
        t_fail install_units_prefix "units do not name /usr/bin/ferry"
    fi

    pyc=$STAGE/usr/lib/ferry/__pycache__/ferry_pg_mirror.$tag.pyc
    if [ -f "$pyc" ] && ! grep -rl "$STAGE" "$STAGE" &&
        grep -q /usr/lib/ferry/ferry_pg_mirror.py "$pyc"; then
        t_pass install_no_destdir_path
    else
        t_fail install_no_destdir_path "the staging path is recorded, or the byte code is missing"
    fi

    t_check install_pg_mirror_runs "$STAGE/usr/bin/ferry-pg-mirror" --help
    t_check install_example_config_valid \
        "$FERRY" --daemon --check-config --config="$STAGE/usr/share/doc/ferry/ferryd.conf.example"

    make -s -C "$FERRY_SRC" uninstall DESTDIR="$STAGE" PREFIX=/usr >"$T/uninstall.out" 2>&1
    rc=$?
    cat "$T/uninstall.out"
    left=$(cd "$STAGE" && find . -type f -o -type l -o -path '*ferry*' | tr '\n' ' ')
    if [ "$rc" = 0 ] && [ -z "$left" ]; then
        t_pass uninstall_removes_all
    else
        t_fail uninstall_removes_all "exit $rc, left: $left"
    fi
fi

# ------------------------------------------------------------------- deps

# A PATH with what build-aux/deps.sh and the build use, but no dpkg-query,
# apt-get, or test tools.
mkdir -p "$T/bin"
for c in sh cc make pkg-config pkgconf grep id; do
    p=$(command -v "$c") && ln -s "$p" "$T/bin/$c"
done
if ! command -v pkg-config >/dev/null 2>&1; then
    t_skip deps_without_dpkg "pkg-config not found"
else
    PATH=$T/bin sh "$FERRY_SRC/build-aux/deps.sh" build >"$T/deps1.out" 2>&1
    rc_build=$?
    PATH=$T/bin sh "$FERRY_SRC/build-aux/deps.sh" test >"$T/deps2.out" 2>&1
    rc_test=$?
    mkdir -p "$T/nopc"
    PATH=$T/bin PKG_CONFIG_LIBDIR=$T/nopc PKG_CONFIG_PATH='' \
        sh "$FERRY_SRC/build-aux/deps.sh" build >"$T/deps3.out" 2>&1
    rc_nolib=$?
    cat "$T/deps1.out" "$T/deps2.out" "$T/deps3.out"
    # Libraries found by pkg-config: the build half is met with no dpkg;
    # the test tools (not on this PATH) are reported, not installed; with
    # no .pc file the library's package is named.
    if [ "$rc_build" = 0 ] && [ "$rc_test" = 1 ] && grep -q 'missing:.* rsync' "$T/deps2.out" &&
        [ "$rc_nolib" = 1 ] && grep -q 'missing:.* libssh-dev' "$T/deps3.out"; then
        t_pass deps_without_dpkg
    else
        t_fail deps_without_dpkg "exits build=$rc_build test=$rc_test nolib=$rc_nolib"
    fi
fi

# make run asks for the build half only; make check for everything.
make_targets_deps() {
    make -n -C "$FERRY_SRC" run 2>/dev/null | grep -q 'deps.sh build' &&
        ! make -n -C "$FERRY_SRC" run 2>/dev/null | grep -q 'deps.sh test' &&
        make -n -C "$FERRY_SRC" deps 2>/dev/null | grep -q 'deps.sh test'
}
t_check make_run_build_deps_only make_targets_deps

t_done
