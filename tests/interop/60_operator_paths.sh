#!/bin/bash
# Operator-supplied paths (--log-file, --*-dest, --backup-dir, --temp-dir,
# --partial-dir, --files-from, --exclude-from, merge files, batch files,
# --password-file, --early-input, the destination; a daemon's secrets file,
# lock file, module path and "exclude from") follow a symlink only when it
# is owned by root or by the euid (rsync 3.5.0, CVE-2026-53802/-53803);
# --insecure-links, or a module's "insecure links = yes", turns that off.
# Each case runs real rsync and ferry on the same fresh tree, with the
# "other user's" links planted as in rsync's testsuite (ln -s, then
# chown -h nobody), and compares the exit code, what happened outside the
# tree and in the destination, and whether ELOOP was reported.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC"
t_setup

if [ "$(id -u)" != 0 ] || ! id nobody >/dev/null 2>&1; then
    t_skip 60_operator_paths "needs root and a 'nobody' user to plant another user's symlink"
    # A module's "insecure links = yes" lets -k follow a link out of the
# module; without it the link is not followed. Same config for rsyncd and
# ferry's daemon, pulled by real rsync.
L=$T/links
mkdir -p "$L/mod" "$L/outside"
echo in >"$L/mod/intree"
echo secret >"$L/outside/secret"
ln -s ../outside "$L/mod/sub"
chown -h nobody "$L/mod/sub"
links_conf="[secure]
    path = $L/mod
    use chroot = no
[insecure]
    path = $L/mod
    use chroot = no
    insecure links = yes"
pull_links() { # MODULE PORT TOOL
    local out=$T/links.$1.$3
    mkdir -p "$out"
    "$RSYNC" -r --copy-dirlinks "rsync://127.0.0.1:$2/$1/" "$out/" >/dev/null 2>&1
    echo "exit $?"
    (cd "$out" && find . | sort)
}
if t_rsyncd_start links_rsyncd "$links_conf"; then
    for m in secure insecure; do pull_links $m "$RSYNCD_PORT" rsync >"$T/links.$m.rsync.state"; done
    t_rsyncd_stop
    if t_ferryd_start links_ferryd "$links_conf"; then
        for m in secure insecure; do pull_links $m "$FERRYD_PORT" ferry >"$T/links.$m.ferry.state"; done
        t_check module_insecure_links_like_rsync diff "$T/links.insecure.rsync.state" "$T/links.insecure.ferry.state"
        t_check module_insecure_links_serves_outside grep -q secret "$T/links.insecure.ferry.state"
        # (without it rsync also lists "sub" and exits 23; ferry leaves the
        # link out: only the refusal itself is compared here)
        t_check module_secure_links_refused sh -c "! grep -q secret '$T/links.secure.rsync.state' &&
            ! grep -q secret '$T/links.secure.ferry.state'"
        t_ferryd_stop
    else
        t_fail ferryd_start "ferry daemon did not start"
    fi
else
    t_fail rsyncd_start "rsync daemon did not start"
fi

t_done
fi

ELOOP_TEXT="Too many levels of symbolic links"

# A fresh tree for one tool: src/f0 (new), dest/f0 (old), outside/victim
# (the file a planted link points at), and in plant/: osl -> outside/victim
# and opd -> outside owned by nobody, mine -> outside owned by us.
make_tree() {
    local b=$1
    mkdir -p "$b/src" "$b/dest" "$b/outside/sub" "$b/plant"
    echo data >"$b/src/f0"
    echo old >"$b/dest/f0"
    touch -d @1000000000 "$b/dest/f0"
    echo f0 >"$b/outside/victim"
    ln -s "$b/outside/victim" "$b/plant/osl"
    ln -s "$b/outside" "$b/plant/opd"
    ln -s "$b/outside" "$b/plant/mine"
    chown -h nobody "$b/plant/osl" "$b/plant/opd"
}

# What the run changed: the entries outside and in dest, the victim's and
# dest/f0's content, and whether the run said ELOOP (not with SAY_ANY=1).
state_of() {
    local b=$1
    (cd "$b" && find outside dest -printf '%p %y %n\n' | sort)
    echo "victim: $(head -c 40 "$b/outside/victim" 2>/dev/null | head -1)"
    echo "dest/f0: $(cat "$b/dest/f0" 2>/dev/null)"
    [ "${SAY_ANY:-0}" = 1 ] || ! grep -q "$ELOOP_TEXT" "$b.err" || echo "said ELOOP"
    echo "exit $(cat "$b.rc")"
}

# same_as_rsync NAME [SETUP_FN] -- ARGS... : run ARGS in the case dir (@B@
# stands for it) with each tool, then compare state_of. SETUP_FN, if not
# "-", runs on each tree first.
same_as_rsync() {
    local name=$1 setup=$2 tool
    shift 3
    for tool in rsync ferry; do
        local b=$T/$name.$tool bin=$RSYNC
        [ $tool = ferry ] && bin=$FERRY
        make_tree "$b"
        [ "$setup" = - ] || "$setup" "$b"
        (cd "$b" && "$bin" "${@//@B@/$b}") >"$b.out" 2>"$b.err" </dev/null
        echo $? >"$b.rc"
        state_of "$b" >"$b.state"
    done
    if diff "$T/$name.rsync.state" "$T/$name.ferry.state"; then
        t_pass "$name"
    else
        echo "--- rsync stderr"; cat "$T/$name.rsync.err"
        echo "--- ferry stderr"; cat "$T/$name.ferry.err"
        t_fail "$name" "differs from rsync (diff above)"
    fi
}

# --log-file: leaf and parent plants refused; --insecure-links and the
# operator's own link follow.
same_as_rsync log_file_leaf - -- -a --log-file=plant/osl src/ dest/
same_as_rsync log_file_parent - -- -a --log-file=@B@/plant/opd/new.log src/ dest/
same_as_rsync log_file_insecure - -- -a --insecure-links --log-file=plant/opd/new.log src/ dest/
same_as_rsync log_file_own_link - -- -a --log-file=plant/mine/new.log src/ dest/

# lists read from files
same_as_rsync files_from_leaf - -- -a --files-from=plant/osl src/ dest/
same_as_rsync files_from_insecure - -- -a --insecure-links --files-from=plant/opd/victim src/ dest/
same_as_rsync exclude_from_parent - -- -a --exclude-from=plant/opd/victim src/ dest/
same_as_rsync include_from_leaf - -- -a --include-from=plant/osl src/ dest/
# --insecure-links counts from where it stands, as rsync reads the file
# while parsing
same_as_rsync exclude_from_insecure_after - -- -a --exclude-from=plant/osl --insecure-links src/ dest/
same_as_rsync exclude_from_insecure_before - -- -a --insecure-links --exclude-from=plant/osl src/ dest/
same_as_rsync exclude_from_own_link - -- -a --exclude-from=plant/mine/victim src/ dest/

# a per-directory merge file behind another user's link is skipped
plant_cvsignore() {
    echo new >"$1/src/f0"
    ln -s ../outside/victim "$1/src/.cvsignore"
    chown -h nobody "$1/src/.cvsignore"
}
same_as_rsync cvsignore_planted plant_cvsignore -- -aC src/ dest/

# directories beside the destination
same_as_rsync backup_dir_leaf - -- -ab --backup-dir=@B@/plant/opd src/ dest/
# (rsync exits 11 here without naming the error; ferry names it)
SAY_ANY=1 same_as_rsync backup_dir_parent - -- -ab --backup-dir=@B@/plant/opd/sub src/ dest/
same_as_rsync backup_dir_insecure - -- -ab --insecure-links --backup-dir=@B@/plant/opd src/ dest/
same_as_rsync backup_dir_own_link - -- -ab --backup-dir=@B@/plant/mine/sub src/ dest/
same_as_rsync backup_dir_relative_mkpath - -- -ab --backup-dir=bk/one/two src/ dest/
outside_basis() {
    echo data >"$1/outside/f0"
    touch -r "$1/src/f0" "$1/outside/f0"
    echo data >"$1/outside/sub/f0"
    touch -r "$1/src/f0" "$1/outside/sub/f0"
    rm "$1/dest/f0"
}
same_as_rsync link_dest_leaf outside_basis -- -a --link-dest=@B@/plant/opd src/ dest/
same_as_rsync compare_dest_parent outside_basis -- -a --compare-dest=@B@/plant/opd/sub src/ dest/
same_as_rsync compare_dest_insecure outside_basis -- -a --insecure-links --compare-dest=@B@/plant/opd src/ dest/
same_as_rsync copy_dest_own_link outside_basis -- -a --copy-dest=@B@/plant/mine src/ dest/
same_as_rsync temp_dir_leaf - -- -a --temp-dir=@B@/plant/opd src/ dest/
same_as_rsync temp_dir_insecure - -- -a --insecure-links --temp-dir=@B@/plant/opd src/ dest/

# batch files
same_as_rsync write_batch_leaf - -- -a --write-batch=plant/osl src/ dest/
same_as_rsync read_batch_parent - -- -a --read-batch=plant/opd/victim dest/
same_as_rsync write_batch_own_link - -- -a --write-batch=plant/mine/b src/ dest/

# the destination itself
same_as_rsync dest_leaf - -- -a src/ plant/opd/
same_as_rsync dest_insecure - -- -a --insecure-links src/ plant/opd/
same_as_rsync dest_own_link - -- -a src/ plant/mine/

# --password-file and --early-input, against a real rsync daemon
mkdir -p "$T/mod"
echo m >"$T/mod/m"
echo "u:secret" >"$T/secrets"
chmod 600 "$T/secrets"
if t_rsyncd_start op_rsyncd "[m]
    path = $T/mod
[auth]
    path = $T/mod
    auth users = u
    secrets file = $T/secrets"; then
    secret_victim() { echo secret >"$1/outside/victim"; chmod 600 "$1/outside/victim"; }
    url=rsync://127.0.0.1:$RSYNCD_PORT
    same_as_rsync password_file_parent secret_victim -- -a --password-file=plant/opd/victim "rsync://u@127.0.0.1:$RSYNCD_PORT/auth/" dest/
    same_as_rsync password_file_leaf secret_victim -- -a --password-file=plant/osl "rsync://u@127.0.0.1:$RSYNCD_PORT/auth/" dest/
    same_as_rsync password_file_own_link secret_victim -- -a --password-file=plant/mine/victim "rsync://u@127.0.0.1:$RSYNCD_PORT/auth/" dest/
    same_as_rsync early_input_parent - -- -a --early-input=plant/opd/victim "$url/m/" dest/
    same_as_rsync early_input_insecure - -- -a --insecure-links --early-input=plant/opd/victim "$url/m/" dest/
    # a pull's destination (client/pull.c), existing and to be made
    same_as_rsync dest_pull_leaf - -- -a "$url/m/" plant/opd/
    same_as_rsync dest_pull_own_link - -- -a "$url/m/" plant/mine/
    # (rsync makes outside/new through the link before it refuses it;
    # ferry refuses first, so only the exit code and the message agree)
    check_pull_new() {
        local b=$T/pull_new
        make_tree "$b"
        (cd "$b" && "$FERRY" -a "$url/m/" plant/opd/new/) >"$b.out" 2>"$b.err"
        local rc=$?
        [ "$rc" = 3 ] && grep -q "change_dir#2 .*$ELOOP_TEXT" "$b.err" && [ ! -e "$b/outside/new" ]
    }
    t_check dest_pull_new_refused check_pull_new
    t_rsyncd_stop
else
    t_fail rsyncd_start "rsync daemon did not start"
fi

# Daemon admin paths: the same config served by rsyncd and by ferry's
# daemon, pulled by real rsync. The secrets file sits behind another user's
# parent link, the lock file is another user's link, a module's path is
# one; the control module has none of them.
A=$T/admin
mkdir -p "$A/mod" "$A/real" "$A/lockvictim" "$A/escape"
echo m >"$A/mod/m"
echo canary >"$A/escape/canary"
printf 'u:secret\n' >"$A/real/secrets"
chmod 600 "$A/real/secrets"
ln -s "$A/real" "$A/planted_dir"
ln -s "$A/lockvictim/lock" "$A/planted_lock"
ln -s "$A/escape" "$A/planted_path"
ln -s "$A/real" "$A/own_dir"
chown -h nobody "$A/planted_dir" "$A/planted_lock" "$A/planted_path"
printf 'secret\n' >"$T/pw"
chmod 600 "$T/pw"
admin_conf="[ok]
    path = $A/mod
    auth users = u
    secrets file = $A/own_dir/secrets
[secrets]
    path = $A/mod
    auth users = u
    secrets file = $A/planted_dir/secrets
[locked]
    path = $A/mod
    max connections = 3
    lock file = $A/planted_lock
[escape]
    path = $A/planted_path"
# pull MODULE DAEMON_PORT -- exit code and what arrived
pull_admin() {
    local out=$T/pulled.$1.$2
    rm -rf "$out"
    mkdir -p "$out"
    "$RSYNC" -a --password-file="$T/pw" "rsync://u@127.0.0.1:$2/$1/" "$out/" >/dev/null 2>&1
    echo "exit $? got: $(cd "$out" && ls | tr '\n' ' ') lock outside: $(ls "$A/lockvictim")"
}
if t_rsyncd_start admin_rsyncd "$admin_conf"; then
    for m in ok secrets locked escape; do
        pull_admin "$m" "$RSYNCD_PORT" >"$T/admin.$m.rsync"
    done
    t_rsyncd_stop
    rm -f "$A/lockvictim/lock"
    if t_ferryd_start admin_ferryd "$admin_conf"; then
        for m in ok secrets locked escape; do
            pull_admin "$m" "$FERRYD_PORT" >"$T/admin.$m.ferry"
            t_check "daemon_admin_path_$m" diff "$T/admin.$m.rsync" "$T/admin.$m.ferry"
        done
        t_ferryd_stop
    else
        t_fail ferryd_start "ferry daemon did not start"
    fi
else
    t_fail rsyncd_start "rsync daemon did not start"
fi

# A module's "insecure links = yes" lets -k follow a link out of the
# module; without it the link is not followed. Same config for rsyncd and
# ferry's daemon, pulled by real rsync.
L=$T/links
mkdir -p "$L/mod" "$L/outside"
echo in >"$L/mod/intree"
echo secret >"$L/outside/secret"
ln -s ../outside "$L/mod/sub"
chown -h nobody "$L/mod/sub"
links_conf="[secure]
    path = $L/mod
    use chroot = no
[insecure]
    path = $L/mod
    use chroot = no
    insecure links = yes"
pull_links() { # MODULE PORT TOOL
    local out=$T/links.$1.$3
    mkdir -p "$out"
    "$RSYNC" -r --copy-dirlinks "rsync://127.0.0.1:$2/$1/" "$out/" >/dev/null 2>&1
    echo "exit $?"
    (cd "$out" && find . | sort)
}
if t_rsyncd_start links_rsyncd "$links_conf"; then
    for m in secure insecure; do pull_links $m "$RSYNCD_PORT" rsync >"$T/links.$m.rsync.state"; done
    t_rsyncd_stop
    if t_ferryd_start links_ferryd "$links_conf"; then
        for m in secure insecure; do pull_links $m "$FERRYD_PORT" ferry >"$T/links.$m.ferry.state"; done
        t_check module_insecure_links_like_rsync diff "$T/links.insecure.rsync.state" "$T/links.insecure.ferry.state"
        t_check module_insecure_links_serves_outside grep -q secret "$T/links.insecure.ferry.state"
        # (without it rsync also lists "sub" and exits 23; ferry leaves the
        # link out: only the refusal itself is compared here)
        t_check module_secure_links_refused sh -c "! grep -q secret '$T/links.secure.rsync.state' &&
            ! grep -q secret '$T/links.secure.ferry.state'"
        t_ferryd_stop
    else
        t_fail ferryd_start "ferry daemon did not start"
    fi
else
    t_fail rsyncd_start "rsync daemon did not start"
fi

t_done
