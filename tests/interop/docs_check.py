"""docs_check.py FERRY MAN1 MAN5: the man pages and the code agree.

- every long option `ferry --help` and `ferry --daemon --help` list has an
  entry (a .TP heading) in ferry.1, or is named in its NOT YET SUPPORTED
  section when --help lists it as not supported;
- every option an entry of ferry.1 names is accepted by ferry (it does not
  answer "unknown option" or "not supported yet");
- the pages hold no control characters (broken font escapes);
- every parameter the daemon's config parser knows has an entry in
  ferryd.conf.5, and every entry there is a parameter the parser knows
  (asked through `ferry --daemon --check-config`).
Prints one line per problem; exits 1 if there was any.
"""
import os
import re
import subprocess
import sys
import tempfile

ferry, man1, man5 = sys.argv[1:4]
problems = []


def unescape(line):
    """Roff text as it reads: \\- is -, font changes and quotes dropped."""
    line = line.replace('\\-', '-').replace('\\(em', '-')
    line = re.sub(r'\\f[BIRP]', '', line)
    line = re.sub(r'^\.(B|I|BI|BR|IR|RB|RI|IB)\s+', '', line)
    return line.replace('"', '')


def headings(path):
    """(section, heading text) of every .TP entry (and its .TQ lines)."""
    out, section, lines = [], '', open(path, encoding='utf-8').read().split('\n')
    for i, line in enumerate(lines):
        if line.startswith('.SH'):
            section = line[4:].strip().strip('"')
        if (line.startswith('.TP') or line.startswith('.TQ')) and i + 1 < len(lines):
            out.append((section, unescape(lines[i + 1])))
    return out


def run(*args):
    p = subprocess.run([ferry, *args], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=30)
    return p.returncode, p.stdout, p.stderr


def help_options(*args):
    """Long options of a --help text: (listed, listed as not supported)."""
    _, out, err = run(*args)
    text = out + err
    main, _, unsupported = text.partition('Recognised but not supported yet:')
    unsupported = unsupported.split('\n\n')[0]
    listed = set()
    for line in main.split('\n'):
        if line.startswith('--'):
            listed.update(re.findall(r'--([a-z0-9][a-z0-9-]*)', line.split('  ')[0]))
    return listed, set(re.findall(r'--([a-z0-9][a-z0-9-]*)', unsupported))


# ---- markup: no control characters (a "\\f" once became a form feed)
for path in (man1, man5):
    for n, line in enumerate(open(path, encoding='utf-8'), 1):
        if re.search(r'[\x00-\x08\x0b-\x1f\x7f]', line):
            problems.append('%s:%d: a control character in the text' % (path, n))

# groff's own warnings (bad requests, escapes, fonts), where groff is there
for path in (man1, man5):
    try:
        g = subprocess.run(['groff', '-man', '-Tutf8', '-ww', '-z', path], capture_output=True,
                           text=True, timeout=60)
    except FileNotFoundError:
        break
    for w in g.stderr.strip().split('\n'):
        if w:
            problems.append('groff: %s' % w)

# ---- ferry.1 and --help
entries1 = headings(man1)
documented = set()
for section, text in entries1:
    if section in ('OPTIONS', 'NOT YET SUPPORTED'):
        documented.update(re.findall(r'--([a-z0-9][a-z0-9-]*)', text))
not_yet_text = ''
in_not_yet = False
for line in open(man1, encoding='utf-8'):
    if line.startswith('.SH'):
        in_not_yet = 'NOT YET SUPPORTED' in line
    elif in_not_yet:
        not_yet_text += unescape(line)
not_yet = set(re.findall(r'--([a-z0-9][a-z0-9-]*)', not_yet_text))

client, client_unsupported = help_options('--help')
daemon, daemon_unsupported = help_options('--daemon', '--help')
if len(client) < 100 or len(daemon) < 5:
    problems.append('--help lists too few options (%d, %d): not parsed' % (len(client), len(daemon)))
for name in sorted((client | daemon) - documented):
    problems.append('ferry.1: --%s is in --help but has no entry' % name)
for name in sorted((client_unsupported | daemon_unsupported) - not_yet - documented):
    problems.append('ferry.1: --%s is listed as not supported by --help but not in NOT YET SUPPORTED'
                    % name)

# every option an entry names is one ferry accepts
for section, text in entries1:
    if section != 'OPTIONS':
        continue
    for m in re.finditer(r'--([a-z0-9][a-z0-9-]*)(=?)', text):
        name, takes = m.group(1), m.group(2)
        if name.endswith('-'):  # a placeholder: --no-OPTION
            continue
        opt = '--' + name + ('=1' if takes else '')
        args = ['--daemon', opt, '--help'] if name in daemon - client else [opt, '--version']
        _, _, err = run(*args)
        if 'unknown option' in err or 'not supported yet' in err:
            problems.append('ferry.1: documents --%s, which ferry refuses: %s'
                            % (name, err.strip().split('\n')[0]))

# ---- ferryd.conf.5 and the config parser
entries5 = [(s, t.strip()) for s, t in headings(man5)
            if s in ('GLOBAL PARAMETERS', 'MODULE PARAMETERS', 'SSH LISTENER')]
params5 = set()
for _, text in entries5:
    # "name" or "name1, name2"
    for part in text.split(','):
        part = part.strip()
        if re.fullmatch(r'[a-z][a-z0-9 -]*', part):
            params5.add(part)
if len(params5) < 40:
    problems.append('ferryd.conf.5: only %d parameter entries found: not parsed' % len(params5))


def parser_knows(name):
    """The daemon's parser takes NAME (a global-section or module line)."""
    with tempfile.TemporaryDirectory() as d:
        conf = os.path.join(d, 'test.conf')
        with open(conf, 'w') as f:
            f.write('[m]\n    path = %s\n    %s = 1\n' % (d, name))
        _, out, err = run('--daemon', '--check-config', '--config=' + conf)
    return 'unknown parameter' not in out + err


for name in sorted(params5):
    if not parser_knows(name):
        problems.append('ferryd.conf.5: documents "%s", which the config parser does not know' % name)

src = os.path.join(os.path.dirname(os.path.abspath(man5)), '..', 'daemon', 'config_params.c')
table = set(re.findall(r'^\s*[GM][A-Z0-9]*\("([^"]+)"', open(src).read(), re.M))
if len(table) < 40:
    problems.append('config_params.c: only %d parameters found: not parsed' % len(table))
for name in sorted(table - params5):
    problems.append('ferryd.conf.5: parameter "%s" of the config parser has no entry' % name)

for p in problems:
    print(p)
print('%d client options, %d daemon options, %d documented; %d parameters, %d documented; %d problems'
      % (len(client), len(daemon), len(documented), len(table), len(params5), len(problems)))
sys.exit(1 if problems else 0)
