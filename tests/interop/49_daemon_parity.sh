#!/bin/bash
# Daemon parity: the same config is served by a real rsync daemon and by
# the ferry daemon, a real rsync client runs the same requests against
# each, and what the client gets (exit code, files) and what the daemon
# writes to its log file must agree with rsyncd.
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
t_require "$RSYNC"
t_setup

SRC=$T/src
mkdir -p "$SRC/sub/deep" "$SRC/sec"
echo hello >"$SRC/a.txt"
echo world >"$SRC/sub/b.txt"
echo deeper >"$SRC/sub/deep/c.txt"
echo secret >"$SRC/sec/k.txt"

# A hook that records its environment (RSYNC_* but the pid) in a file.
mkdir -p "$T/hooks"
cat >"$T/record.sh" <<'EOF'
#!/bin/sh
env | grep '^RSYNC_' | grep -v '^RSYNC_PID=' | sort >"$1"
EOF
chmod +x "$T/record.sh"

conf_for() { # DAEMON
    cat <<EOF2
[pub]
    path = $SRC
[excl]
    path = $SRC
    exclude = sub/ /sec
[ro]
    path = $SRC
    comment = read only
[up]
    path = $T/up.$1
    read only = no
[xlog]
    path = $SRC
    transfer logging = yes
    log format = %o %m %f %n%L %l %i %u %h %a %C %B %U %G %b
[xup]
    path = $T/up.$1
    read only = no
    transfer logging = yes
    log format = %o %m %f %n%L %l %i %C %B %U %G %b
[strict]
    path = $SRC
    auth users = alice
    secrets file = $T/secrets644
[deep]
    path = $SRC
    exclude = sub/deep
[refz]
    path = $SRC
    refuse options = compress
[refdel]
    path = $SRC
    refuse options = delete
[refpart]
    path = $SRC
    refuse options = partial
[hook]
    path = $SRC
    pre-xfer exec = $T/record.sh $T/hooks/$1.pre
EOF2
}

mkdir -p "$T/up.rsyncd" "$T/up.ferryd"
t_rsyncd_start parity_rsyncd "$(conf_for rsyncd)" || { t_fail rsyncd_start; t_done; }
t_ferryd_start parity_ferryd "$(conf_for ferryd)" || { t_fail ferryd_start; t_done; }
declare -A PORT=([rsyncd]=$RSYNCD_PORT [ferryd]=$FERRYD_PORT)
declare -A LOG=([rsyncd]=$T/parity_rsyncd.log [ferryd]=$T/parity_ferryd.log)

# Run the same rsync client command against both daemons; keep exit code,
# stdout and stderr (ports and daemon names normalised).
run_both() { # TAG RSYNC-ARGS... (URL as rsync://127.0.0.1:PORT/..., DST)
    local tag=$1 d
    shift
    for d in rsyncd ferryd; do
        rm -rf "$T/dst.$d"
        mkdir -p "$T/dst.$d"
        local args=("${@//PORT/${PORT[$d]}}")
        args=("${args[@]//DST/$T/dst.$d}")
        "$RSYNC" "${args[@]}" >"$T/$tag.$d.out" 2>"$T/$tag.$d.err" </dev/null
        echo $? >"$T/$tag.$d.rc"
    done
}

same_rc() { # TAG
    cmp -s "$T/$1.rsyncd.rc" "$T/$1.ferryd.rc" && return 0
    echo "exit codes differ: rsyncd $(cat "$T/$1.rsyncd.rc") ferryd $(cat "$T/$1.ferryd.rc")"
    cat "$T/$1.ferryd.err"
    return 1
}

# A directory the module excludes does not exist for the client, also
# when it is only the directory an argument names a file or the contents
# of: rsync fails its change_dir with ENOENT (code 23) and sends nothing.
check_excluded_source_dir() {
    local url
    for url in excl/sub/ excl/sub/deep/c.txt excl/sec/k.txt excl/sub/deep/; do
        run_both exdir -r "rsync://127.0.0.1:PORT/$url" DST/
        same_rc exdir || return 1
        [ "$(cat "$T/exdir.ferryd.rc")" = 23 ] || return 1
        grep -q 'change_dir "[a-z/]*" .*failed: No such file or directory' \
            "$T/exdir.ferryd.err" || { cat "$T/exdir.ferryd.err"; return 1; }
        [ -z "$(ls -A "$T/dst.ferryd")" ] || { echo "$url leaked:"; ls -R "$T/dst.ferryd"; return 1; }
    done
}
t_check excluded_source_dir_is_missing check_excluded_source_dir

# The log's "rsync on REQUEST from HOST (ADDR)" names what the client
# asked for (its path arguments after "."), not just the module.
check_request_logged() {
    run_both req -r rsync://127.0.0.1:PORT/pub/sub rsync://127.0.0.1:PORT/pub/a.txt DST/
    same_rc req || return 1
    local d
    for d in rsyncd ferryd; do
        grep -q 'rsync on pub/sub pub/a.txt from localhost (127.0.0.1)$' "${LOG[$d]}" ||
            { echo "$d:"; tail -5 "${LOG[$d]}"; return 1; }
    done
}
t_check request_in_log_line check_request_logged

# With -s (--secluded-args) the path arguments come in a second list;
# pre-xfer exec must still run and see the same RSYNC_REQUEST/RSYNC_ARG#.
check_secluded_hook() {
    rm -f "$T/hooks/"*.pre
    run_both sec -s -r rsync://127.0.0.1:PORT/hook/sub rsync://127.0.0.1:PORT/hook/a.txt DST/
    same_rc sec || return 1
    [ "$(cat "$T/sec.ferryd.rc")" = 0 ] || return 1
    diff "$T/hooks/rsyncd.pre" "$T/hooks/ferryd.pre" || return 1
    grep -q '^RSYNC_REQUEST=hook/sub hook/a.txt$' "$T/hooks/ferryd.pre"
}
t_check secluded_args_pre_xfer_exec check_secluded_hook

# The log lines of one connection, from "rsync on/to" on, with the byte
# counts and where the error was raised left out.
log_tail() { # LOGFILE
    sed -E -e 's/^[0-9\/]+ [0-9:]+ \[[0-9]+\] //' \
        -e 's/^sent [0-9]+ bytes  received [0-9]+ bytes  total size ([0-9]+)$/sent N  received N  total size \1/' \
        -e 's/^(rsync|ferry) error: (.*) at .*$/ERROR LINE: \2/' \
        -e 's/^(rsync|ferry): /MSG: /' "$1" |
        awk '/^rsync (on|to) /{keep=""} {keep=keep $0 "\n"} END{printf "%s", keep}'
}

# All lines of a log, without stamps, the startup line and byte counts.
log_lines() { # LOGFILE
    sed -E -e 's/^[0-9\/]+ [0-9:]+ \[[0-9]+\] //' -e '/ starting, listening on port /d' \
        -e 's/^sent [0-9]+ bytes  received [0-9]+ bytes  total size ([0-9]+)$/sent N  received N  total size \1/' \
        -e '/^connect from /d' "$1" |
        # the harness's port probe: rsyncd complains of the closed socket
        grep -v -e 'safe_read failed' -e 'safe_write failed' -e 'protocol data stream (code 12)'
}

# Each transfer logs the file-list step, then its totals; a refusal logs
# its message and the error with its exit code, as rsyncd does.
check_log_lines() {
    local case
    for case in "pull -r rsync://127.0.0.1:PORT/pub/sub/ DST/" \
        "push -r $SRC/sub/ rsync://127.0.0.1:PORT/up/" \
        "ro -r $SRC/sub/ rsync://127.0.0.1:PORT/ro/"; do
        # shellcheck disable=SC2086
        run_both $case
        local tag=${case%% *}
        same_rc "$tag" || return 1
        sleep 0.3 # the daemons write their last lines after the client has gone
        diff <(log_tail "${LOG[rsyncd]}") <(log_tail "${LOG[ferryd]}") || return 1
    done
}
t_check log_lines_of_a_transfer check_log_lines

# A module with its own "log file": what happens before the module is
# entered (access denied or allowed, max connections, failed auth) stays in
# the daemon's log, as rsyncd.conf(5) says ("the global log will still
# contain any authorization failures"); the transfer goes to the module's.
check_module_log() {
    printf 'alice:secret\n' >"$T/secrets"
    printf 'wrong\n' >"$T/badpw"
    chmod 600 "$T/secrets" "$T/badpw"
    local d body main_r=${PORT[rsyncd]} main_f=${PORT[ferryd]}
    for d in rsyncd ferryd; do
        body="[deny]
    path = $SRC
    log file = $T/mlog.$d
    hosts deny = 127.0.0.1
[auth]
    path = $SRC
    log file = $T/mlog.$d
    auth users = alice
    secrets file = $T/secrets
[full]
    path = $SRC
    log file = $T/mlog.$d
    max connections = -1
[ok]
    path = $SRC
    log file = $T/mlog.$d"
        if [ $d = rsyncd ]; then
            t_rsyncd_start mlog_$d "$body" || return 1
            PORT[$d]=$RSYNCD_PORT
        else
            t_ferryd_start mlog_$d "$body" || return 1
            PORT[$d]=$FERRYD_PORT
        fi
    done
    run_both mdeny rsync://127.0.0.1:PORT/deny/
    run_both mauth --password-file="$T/badpw" rsync://alice@127.0.0.1:PORT/auth/
    run_both mfull rsync://127.0.0.1:PORT/full/
    run_both mok rsync://127.0.0.1:PORT/ok/
    PORT[rsyncd]=$main_r PORT[ferryd]=$main_f
    same_rc mdeny && same_rc mauth && same_rc mfull && same_rc mok || return 1
    sleep 0.3
    local f
    for f in "$T/mlog_%s.log" "$T/mlog.%s"; do
        # shellcheck disable=SC2059
        diff <(log_lines "$(printf "$f" rsyncd)") <(log_lines "$(printf "$f" ferryd)") || return 1
    done
}
t_check module_log_file_gets_only_the_transfer check_module_log

# "transfer logging": the lines of the sender (a pull) and of the receiver
# (a push with --delete) match rsyncd's, escapes for escapes: %b %c and %C
# of a transfer, %G/%U with -a, the untransferred items a format with %i
# shows (new dirs, symlinks) and the deletions ("del."). %b, last, counts
# bytes as written, which depends on how the stream was framed and
# flushed: only whether it is 0 must agree.
check_transfer_log() {
    ln -sfn a.txt "$SRC/link"
    touch -d 2001-01-01 "$SRC" # "." is ".d..t......" whatever the clock says
    local case
    for case in "xpull -a rsync://127.0.0.1:PORT/xlog/ DST/" \
        "xpulls -a rsync://127.0.0.1:PORT/xlog/sub/ DST/" \
        "xpush -a $SRC/ rsync://127.0.0.1:PORT/xup/" \
        "xdel -a --delete $SRC/sub/ rsync://127.0.0.1:PORT/xup/"; do
        # shellcheck disable=SC2086
        run_both $case
        same_rc "${case%% *}" || return 1
        sleep 0.3
        diff <(log_tail "${LOG[rsyncd]}" | sed -E -e 's/up\.rsyncd/UP/' -e 's/ [1-9][0-9]*$/ B/' | sort) \
            <(log_tail "${LOG[ferryd]}" | sed -E -e 's/up\.ferryd/UP/' -e 's/ [1-9][0-9]*$/ B/' | sort) ||
            return 1
    done
    grep -q '^[0-9/]* [0-9:]* \[[0-9]*\] del\. xup a.txt ' "${LOG[ferryd]}"
}
t_check transfer_logging_lines check_transfer_log

# "reverse lookup = no" globally: a module that turns it back on gets the
# client's name (hosts deny = local* matches), and a host name in hosts
# allow that resolves to the client names it in the log.
check_reverse_lookup() {
    getent hosts localhost | grep -q '127\.0\.0\.1' || { echo "no localhost name"; return 0; }
    local d body main_r=${PORT[rsyncd]} main_f=${PORT[ferryd]}
    body="reverse lookup = no
[byname]
    path = $SRC
    hosts allow = localhost
[lookup]
    path = $SRC
    reverse lookup = yes
    hosts deny = local*"
    t_rsyncd_start rl_rsyncd "$body" || return 1
    t_ferryd_start rl_ferryd "$body" || return 1
    PORT[rsyncd]=$RSYNCD_PORT PORT[ferryd]=$FERRYD_PORT
    run_both rl1 rsync://127.0.0.1:PORT/byname/
    run_both rl2 rsync://127.0.0.1:PORT/lookup/
    PORT[rsyncd]=$main_r PORT[ferryd]=$main_f
    same_rc rl1 && same_rc rl2 || return 1
    [ "$(cat "$T/rl2.ferryd.rc")" = 5 ] || return 1
    sleep 0.3
    diff <(log_lines "$T/rl_rsyncd.log") <(log_lines "$T/rl_ferryd.log")
}
t_check module_reverse_lookup check_reverse_lookup

# An option a module refuses is refused however the client turns it on:
# --zc/--compress-level compress, --remove-source-files and
# --delete-missing-args delete, --append/--inplace keep partial files
# (options.c: refused_compress/refused_delete/refused_partial).
check_implied_refusals() {
    local case
    for case in "refz --zc=zlib" "refz --compress-level=3" "refdel --remove-source-files" \
        "refdel --delete-missing-args" "refpart --append" "refpart --inplace"; do
        local mod=${case%% *} opt=${case#* }
        run_both implied -a "$opt" "rsync://127.0.0.1:PORT/$mod/a.txt" DST/
        # rsyncd's client may see a reset (10) before the refusal's code 4
        sed -i 's/^10$/4/' "$T/implied.rsyncd.rc"
        same_rc implied || { echo "$case"; return 1; }
        [ "$(cat "$T/implied.ferryd.rc")" = 4 ] || { echo "$case"; return 1; }
        grep -q 'The server is configured to refuse --' "$T/implied.ferryd.err" || return 1
        [ ! -e "$T/dst.ferryd/a.txt" ] || return 1
    done
    # "none" is no compression: nothing to refuse
    run_both implied -a --zc=none rsync://127.0.0.1:PORT/refz/a.txt DST/
    same_rc implied && [ "$(cat "$T/implied.ferryd.rc")" = 0 ]
}
t_check implied_options_refused check_implied_refusals

# A daemon started over a remote shell (rsync -e RSH host::module) logs
# the client as "UNKNOWN (0.0.0.0)", or by the address in REMOTE_HOST /
# SSH_CONNECTION, and without the "rsync allowed access" line of a
# listening daemon (clientserver.c: am_daemon < 0).
check_rsh_daemon_log() {
    printf '#!/bin/sh\nshift\nexec sh -c "$*"\n' >"$T/rsh.sh"
    chmod +x "$T/rsh.sh"
    local d bin
    for d in rsyncd ferryd; do
        printf 'log file = %s\nuse chroot = no\n[pub]\n    path = %s\n' \
            "$T/rsh_$d.log" "$SRC" >"$T/rsh_$d.conf"
        bin=$RSYNC
        [ $d = ferryd ] && bin=$FERRY
        rm -rf "$T/dst.$d"
        "$RSYNC" -e "$T/rsh.sh" --rsync-path="$bin --config=$T/rsh_$d.conf" -a \
            x::pub/a.txt "$T/dst.$d/" >/dev/null 2>&1 </dev/null || return 1
        SSH_CONNECTION="10.1.2.3 5555 10.0.0.1 22" "$RSYNC" -e "$T/rsh.sh" \
            --rsync-path="$bin --config=$T/rsh_$d.conf" -a x::pub/a.txt "$T/dst.$d/" \
            >/dev/null 2>&1 </dev/null || return 1
    done
    diff <(log_lines "$T/rsh_rsyncd.log") <(log_lines "$T/rsh_ferryd.log") || return 1
    grep -q 'rsync on pub/a.txt from UNKNOWN (0\.0\.0\.0)$' "$T/rsh_ferryd.log" &&
        grep -q 'rsync on pub/a.txt from UNKNOWN (10\.1\.2\.3)$' "$T/rsh_ferryd.log"
}
t_check rsh_daemon_log check_rsh_daemon_log

# A refusal reaches the client with the daemon's closing error line after
# it, as rsyncd's log_exit sends it: "... error: syntax or usage error
# (code 1) at ... [Receiver=...]".
check_refusal_exit_line() {
    run_both roexit -r "$SRC/sub/" rsync://127.0.0.1:PORT/ro/
    local d
    for d in rsyncd ferryd; do
        grep -A1 '^ERROR: module is read only$' "$T/roexit.$d.err" |
            grep -q '^[a-z]* error: syntax or usage error (code 1) at .* \[Receiver=' ||
            { echo "$d:"; cat "$T/roexit.$d.err"; return 1; }
    done
}
t_check refusal_exit_line_to_client check_refusal_exit_line

# The module's "filter" is filter rules split at whitespace ("- keep/ +
# *.bak - a*" is three rules); "exclude from" is a file of patterns that
# may carry "- "/"+ " prefixes; what the module excludes is neither
# received nor deleted by --delete; an unreadable rule file refuses the
# transfer instead of serving the module unfiltered.
check_module_filter_params() {
    local fsrc=$T/fsrc d main_r=${PORT[rsyncd]} main_f=${PORT[ferryd]}
    mkdir -p "$fsrc/keep" "$T/fup.rsyncd" "$T/fup.ferryd"
    echo a >"$fsrc/a"
    echo b >"$fsrc/a.bak"
    echo k >"$fsrc/keep/k"
    echo c >"$fsrc/c"
    printf -- '- *.bak\n' >"$T/exf"
    for d in rsyncd ferryd; do echo old >"$T/fup.$d/z.bak"; done
    local body="[fl]
    path = $fsrc
    filter = - keep/ + *.bak - a*
[fup]
    path = $T/fup.\$d
    read only = no
    exclude from = $T/exf
[nofile]
    path = $fsrc
    exclude from = $T/missing"
    t_rsyncd_start flt_rsyncd "${body//\$d/rsyncd}" || return 1
    PORT[rsyncd]=$RSYNCD_PORT
    t_ferryd_start flt_ferryd "${body//\$d/ferryd}" || return 1
    PORT[ferryd]=$FERRYD_PORT
    run_both flt -a rsync://127.0.0.1:PORT/fl/ DST/
    local got
    got=$(diff <(cd "$T/dst.rsyncd" && find . | sort) <(cd "$T/dst.ferryd" && find . | sort))
    [ -z "$got" ] && [ -e "$T/dst.ferryd/a.bak" ] && [ ! -e "$T/dst.ferryd/a" ] &&
        [ ! -e "$T/dst.ferryd/keep" ] || got="fl: $got $(ls -R "$T/dst.ferryd")"
    run_both fup -a --delete "$fsrc/" rsync://127.0.0.1:PORT/fup/
    run_both nofile -a rsync://127.0.0.1:PORT/nofile/ DST/
    PORT[rsyncd]=$main_r PORT[ferryd]=$main_f
    [ -z "$got" ] || { echo "$got"; return 1; }
    same_rc flt && same_rc fup || return 1
    diff <(cd "$T/fup.rsyncd" && find . | sort) <(cd "$T/fup.ferryd" && find . | sort) || return 1
    [ -e "$T/fup.ferryd/z.bak" ] && [ ! -e "$T/fup.ferryd/a.bak" ] || return 1
    grep -q '^ERROR: daemon refused to receive file "a.bak"$' "$T/fup.ferryd.err" || return 1
    [ "$(cat "$T/nofile.ferryd.rc")" != 0 ] && [ -z "$(ls -A "$T/dst.ferryd")" ]
}
t_check module_filter_parameters check_module_filter_params

# The module's rules match names from the module's root, whatever
# directory the client pulls: with "exclude = sub/deep", pulling mod/sub/
# must not send deep/ (rsync prefixes the directory, exclude.c).
check_rules_from_module_root() {
    run_both subpull -a rsync://127.0.0.1:PORT/deep/sub/ DST/
    same_rc subpull || return 1
    [ ! -e "$T/dst.ferryd/deep" ] || { echo "sub/deep leaked"; ls -R "$T/dst.ferryd"; return 1; }
    [ -e "$T/dst.ferryd/b.txt" ] || return 1
    run_both subpull -a --no-inc-recursive rsync://127.0.0.1:PORT/deep/sub/ DST/
    [ ! -e "$T/dst.ferryd/deep" ] && [ -e "$T/dst.ferryd/b.txt" ]
}
t_check rules_match_from_module_root check_rules_from_module_root

# A secrets file others can read: rsyncd logs the strict-modes complaint
# on its own line, then "auth failed ...: ignoring secrets file".
check_strict_modes_log() {
    printf 'alice:secret\n' >"$T/secrets644"
    chmod 644 "$T/secrets644"
    printf 'secret\n' >"$T/alicepw"
    chmod 600 "$T/alicepw"
    run_both strict --password-file="$T/alicepw" rsync://alice@127.0.0.1:PORT/strict/
    same_rc strict || return 1
    sleep 0.3
    local d
    for d in rsyncd ferryd; do
        grep -A1 '\] secrets file must not be other-accessible (see strict modes option)$' \
            "${LOG[$d]}" | grep -q 'auth failed on module strict from .* for alice: ignoring secrets file$' ||
            { echo "$d:"; tail -3 "${LOG[$d]}"; return 1; }
    done
}
t_check strict_modes_log_lines check_strict_modes_log

t_done
