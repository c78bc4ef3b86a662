import json, sys
# check.py OUT RC [EVENT...]: every line of OUT is one JSON object; the
# first is "start" with schema 1, exactly one "end", last, with exit_code RC;
# each EVENT named must appear.
path, rc = sys.argv[1], int(sys.argv[2])
want = sys.argv[3:]
with open(path, 'rb') as f:
    raw = f.read()
lines = raw.decode('utf-8').split('\n')
assert lines[-1] == '', 'no newline at the end'
evs = [json.loads(l) for l in lines[:-1]]
assert all(isinstance(e, dict) and isinstance(e.get('event'), str) for e in evs), 'not objects with an event'
assert evs and evs[0]['event'] == 'start' and evs[0]['schema'] == 1, 'first event not start/schema 1'
ends = [e for e in evs if e['event'] == 'end']
assert len(ends) == 1 and evs[-1] is ends[0], 'not exactly one end event, last'
assert ends[0]['exit_code'] == rc, 'end exit_code %r != %d' % (ends[0]['exit_code'], rc)
assert ends[0]['schema'] == 1
# the end event carries the run's totals: numbers, or all null when a
# second signal forced the exit; the same as the stats event's when one came
TOTALS = ('files', 'files_transferred', 'files_created', 'files_deleted', 'total_size',
          'transferred_size', 'literal_bytes', 'matched_bytes', 'bytes_sent', 'bytes_received')
end = ends[0]
forced = end['dry_run'] is None
for k in TOTALS + ('elapsed_ms',):
    assert k in end, 'end has no %s' % k
    if forced:
        assert end[k] is None, 'forced end: %s not null' % k
    else:
        assert isinstance(end[k], int) and not isinstance(end[k], bool) and end[k] >= 0, \
            'end %s = %r' % (k, end[k])
stats = [e for e in evs if e['event'] == 'stats']
assert len(stats) <= 1, 'more than one stats event'
if stats and not forced:
    for k in TOTALS:
        assert stats[0][k] == end[k], 'stats %s %r != end %r' % (k, stats[0][k], end[k])
    assert end['elapsed_ms'] >= stats[0]['elapsed_ms']
for e in evs:
    if e['event'] == 'progress':
        assert isinstance(e['total_is_final'], bool)
    if e['event'] == 'stats':
        assert isinstance(e['elapsed_ms'], int) and isinstance(e['dry_run'], bool)
seen = {e['event'] for e in evs}
for w in want:
    k, _, v = w.partition('=')
    if v:
        assert any(str(e.get(k.split('.')[1])) == v for e in evs if e['event'] == k.split('.')[0]), 'no %s' % w
    else:
        assert k in seen, 'no %s event' % k
