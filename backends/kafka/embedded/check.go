package embedded

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The pre-start check of the broker's files (Start calls checkDataDir
// before kfake loads them). kfake reads its files forgivingly: a segment
// is cut at the first batch whose CRC fails, dropping every batch after
// it; a groups or pids log stops at the first bad entry and is appended to
// after the garbage, so every later commit is lost at the next load; a
// metadata file whose values changed but still parses is believed; a
// missing meta.json or topics.json makes a fresh, empty cluster. Any of
// these silently loses rows, relations or committed offsets (rows emitted
// twice). This check tells a torn tail, the ordinary trace of a crash in
// the middle of a write, from damage: the first is repaired (the partial
// last record cut off, a WARN naming the file and the bytes dropped), the
// second refuses the start with a *DamageError naming the file and
// offset.
//
// What it reads, per file of <dir>:
//
//   - partitions/<topic>-<p>/<base>.dat, .idx: every record batch's
//     framing, magic, CRC32C and offsets (the first is the file's base;
//     they increase; a topic that is not compacted has no gaps, within
//     and across segments), and one valid 15-byte .idx entry per batch.
//     A torn tail is only in the partition's last segment and is at most
//     one batch: a partial batch (none of its bytes left, even, while
//     its .idx entry is there: the order in which two files' pages reach
//     the disk is not known), or a whole batch whose .idx entry was not
//     written (kfake writes the batch, then its entry, then acknowledges
//     it; such a batch was never acknowledged).
//   - groups.log, pids.log: kfake's framed entries (length, CRC32C,
//     version); a torn tail is a partial last entry after which no whole
//     entry follows.
//   - meta.json, topics.json and the other JSON files: they parse; topics
//     exist whenever partition data does.
//   - clean.json, written by Close after kfake saved everything: the
//     size and CRC32C of every metadata and log file and the size of every
//     segment at that moment. While it is there (the last stop was clean)
//     every file it names must be there unchanged; it is removed before
//     kfake starts, so after a crash the check relies on the structure
//     alone (a segment deleted from a compacted topic then goes unseen:
//     compaction leaves gaps too).
const manifestName = "clean.json"

// DamageError is the refusal of a damaged data directory.
type DamageError struct {
	File   string // path of the damaged file
	Offset int64  // byte offset of the damage; -1 when the whole file is concerned
	Reason string
}

func (e *DamageError) Error() string {
	at := ""
	if e.Offset >= 0 {
		at = " at byte " + strconv.FormatInt(e.Offset, 10)
	}
	return fmt.Sprintf("embedded: %s is damaged%s: %s; fvsql will not start on it, because the broker would drop or misread what follows. "+
		"Restore the data directory from a backup, or move the damaged file (or its partition's directory) aside to start with what remains",
		e.File, at, e.Reason)
}

// ErrDamaged matches every *DamageError.
var ErrDamaged = errors.New("embedded: damaged data directory")

// Is makes errors.Is(err, ErrDamaged) true.
func (e *DamageError) Is(target error) bool { return target == ErrDamaged }

var crc32c = crc32.MakeTable(crc32.Castagnoli)

const (
	batchHeader  = 61 // a RecordBatch with no records
	idxEntrySize = 15
	logEntryHead = 10 // kfake's framed log entry: length, CRC32C, version
)

// manifest is clean.json.
type manifest struct {
	Version int                      `json:"version"`
	Files   map[string]manifestEntry `json:"files"` // by path relative to the data dir
}

type manifestEntry struct {
	Size  int64   `json:"size"`
	CRC32 *uint32 `json:"crc32c,omitempty"` // metadata and log files
}

// checkDataDir checks dir as the package comment of this file says,
// repairs torn tails, and removes clean.json. A missing dir is fine.
func checkDataDir(dir string, log *slog.Logger) error {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := checkManifest(dir); err != nil {
		return err
	}
	topics, err := checkMetadata(dir)
	if err != nil {
		return err
	}
	pdirs, err := os.ReadDir(filepath.Join(dir, "partitions"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("embedded: %w", err)
	}
	cut := map[topicPart]int64{} // the partitions whose tail was cut, and their new ends
	for _, d := range pdirs {
		if !d.IsDir() {
			continue
		}
		tp, known := topics[d.Name()]
		if !known {
			continue // kfake ignores a directory of no topic (a drop that crashed before removing it)
		}
		end, repaired, err := checkPartition(filepath.Join(dir, "partitions", d.Name()), tp.compacted, log)
		if err != nil {
			return err
		}
		if repaired {
			cut[topicPart{tp.topic, tp.part}] = max(end, 0)
		}
	}
	for _, name := range []string{"groups.log", "pids.log"} {
		if err := checkEntryLog(filepath.Join(dir, name), log); err != nil {
			return err
		}
	}
	if err := clampCommits(filepath.Join(dir, "groups.log"), cut, log); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, manifestName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("embedded: %w", err)
	}
	return nil
}

// checkManifest compares the files clean.json names with what is there.
func checkManifest(dir string) error {
	path := filepath.Join(dir, manifestName)
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return &DamageError{File: path, Offset: -1, Reason: "it does not parse: " + err.Error()}
	}
	names := make([]string, 0, len(m.Files))
	for name := range m.Files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		want := m.Files[name]
		p := filepath.Join(dir, filepath.FromSlash(name))
		if want.CRC32 == nil {
			st, err := os.Stat(p)
			if errors.Is(err, fs.ErrNotExist) {
				return &DamageError{File: p, Offset: -1, Reason: "it is missing, though the last clean stop left it there"}
			}
			if err != nil {
				return fmt.Errorf("embedded: %w", err)
			}
			if st.Size() != want.Size {
				return &DamageError{File: p, Offset: min(st.Size(), want.Size),
					Reason: fmt.Sprintf("it has %d bytes, %d at the last clean stop", st.Size(), want.Size)}
			}
			continue
		}
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return &DamageError{File: p, Offset: -1, Reason: "it is missing, though the last clean stop left it there"}
		}
		if err != nil {
			return fmt.Errorf("embedded: %w", err)
		}
		if int64(len(b)) != want.Size || crc32.Checksum(b, crc32c) != *want.CRC32 {
			return &DamageError{File: p, Offset: -1, Reason: fmt.Sprintf("its contents (%d bytes) differ from those of the last clean stop (%d bytes, checksum)", len(b), want.Size)}
		}
	}
	return nil
}

// writeManifest writes clean.json: Close calls it once kfake has saved
// everything and stopped.
func writeManifest(dir string) error {
	m := manifest{Version: 1, Files: map[string]manifestEntry{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := d.Name()
		switch {
		case rel == manifestName || strings.HasSuffix(name, ".tmp"):
		case strings.HasSuffix(name, ".dat") || strings.HasSuffix(name, ".idx"):
			st, err := d.Info()
			if err != nil {
				return err
			}
			m.Files[filepath.ToSlash(rel)] = manifestEntry{Size: st.Size()}
		case name == "session_state.json":
			// kfake reads it once and removes it; a damaged one is ignored
			// (its in-flight sessions are lost, nothing durable).
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := crc32.Checksum(b, crc32c)
			m.Files[filepath.ToSlash(rel)] = manifestEntry{Size: int64(len(b)), CRC32: &sum}
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("embedded: clean-stop manifest: %w", err)
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, manifestName+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("embedded: clean-stop manifest: %w", err)
	}
	if _, err := f.Write(raw); err != nil {
		f.Close()
		return fmt.Errorf("embedded: clean-stop manifest: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("embedded: clean-stop manifest: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("embedded: clean-stop manifest: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, manifestName))
}

type topicPart struct {
	topic string
	part  int32
}

// partInfo is what checkMetadata knows of a partition.
type partInfo struct {
	topicPart
	compacted bool
}

// checkMetadata parses the JSON files and returns the partitions by the
// name of their directories (url-escaped topic, "-", partition).
func checkMetadata(dir string) (map[string]partInfo, error) {
	for _, name := range []string{"meta.json", "topics.json", "broker_configs.json", "acls.json", "quotas.json", "seq_windows.json", "sasl.json"} {
		p := filepath.Join(dir, name)
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("embedded: %w", err)
		}
		if !json.Valid(b) {
			return nil, &DamageError{File: p, Offset: -1, Reason: "it is not valid JSON"}
		}
	}
	hasData := false
	for _, name := range []string{"groups.log", "pids.log", "partitions"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			hasData = true
		}
	}
	for _, name := range []string{"meta.json", "topics.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); errors.Is(err, fs.ErrNotExist) && hasData {
			return nil, &DamageError{File: filepath.Join(dir, name), Offset: -1,
				Reason: "it is missing while the directory holds the broker's data; the broker would start empty and ignore that data"}
		}
	}
	var pt struct {
		Topics []struct {
			Name       string            `json:"name"`
			Partitions int               `json:"partitions"`
			Configs    map[string]string `json:"configs"`
		} `json:"topics"`
	}
	topics := map[string]partInfo{}
	b, err := os.ReadFile(filepath.Join(dir, "topics.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return topics, nil
	}
	if err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	if err := json.Unmarshal(b, &pt); err != nil {
		return nil, &DamageError{File: filepath.Join(dir, "topics.json"), Offset: -1, Reason: "it does not parse: " + err.Error()}
	}
	for _, t := range pt.Topics {
		compacted := strings.Contains(t.Configs["cleanup.policy"], "compact")
		for p := range t.Partitions {
			topics[fmt.Sprintf("%s-%d", url.PathEscape(t.Name), p)] = partInfo{topicPart{t.Name, int32(p)}, compacted}
		}
	}
	return topics, nil
}

// checkEntryLog checks one of kfake's framed logs (groups.log, pids.log).
func checkEntryLog(path string, log *slog.Logger) error {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	pos := 0
	for pos < len(raw) {
		n, ok := logEntryAt(raw, pos)
		if !ok {
			break
		}
		pos += n
	}
	if pos == len(raw) {
		return nil
	}
	// A torn tail is a partial entry: shorter than its length says, and
	// no whole entry after it. An entry that is all there with a wrong
	// checksum, or whole entries after the bad one, are damage.
	rest := len(raw) - pos
	if rest >= logEntryHead {
		length := int(binary.LittleEndian.Uint32(raw[pos:]))
		if 8+length <= rest {
			return &DamageError{File: path, Offset: int64(pos), Reason: "an entry's checksum does not match its contents"}
		}
	}
	for j := pos + 1; j+logEntryHead <= len(raw); j++ {
		if _, ok := logEntryAt(raw, j); ok {
			return &DamageError{File: path, Offset: int64(pos), Reason: fmt.Sprintf("an entry is unreadable and whole entries follow it (the next at byte %d)", j)}
		}
	}
	return truncateTail(path, int64(pos), int64(rest), "a partial last entry", log)
}

// logEntryAt is the size of the valid framed entry at raw[pos:].
func logEntryAt(raw []byte, pos int) (int, bool) {
	if pos+logEntryHead > len(raw) {
		return 0, false
	}
	length := int(binary.LittleEndian.Uint32(raw[pos:]))
	if length < 2 || pos+8+length > len(raw) || length > len(raw) {
		return 0, false
	}
	if crc32.Checksum(raw[pos+8:pos+8+length], crc32c) != binary.LittleEndian.Uint32(raw[pos+4:]) {
		return 0, false
	}
	return 8 + length, true
}

// checkPartition checks a partition's segments, oldest first, and
// returns the offset after its last batch (-1: none) and whether its tail
// was cut.
func checkPartition(pdir string, compacted bool, log *slog.Logger) (int64, bool, error) {
	entries, err := os.ReadDir(pdir)
	if err != nil {
		return -1, false, fmt.Errorf("embedded: %w", err)
	}
	var bases []int64
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".dat"); ok {
			if base, err := strconv.ParseInt(name, 10, 64); err == nil {
				bases = append(bases, base)
			}
		}
	}
	slices.Sort(bases)
	next := int64(-1) // the offset after the previous segment's last batch
	repaired := false
	for i, base := range bases {
		end, cut, err := checkSegment(pdir, base, next, compacted, i == len(bases)-1, log)
		if err != nil {
			return -1, false, err
		}
		if end >= 0 {
			next = end
		}
		repaired = repaired || cut
	}
	return next, repaired, nil
}

// checkSegment checks one segment and its index. prevEnd is the offset
// after the previous segment's last batch (-1: none); it returns the one
// after this segment's last batch (-1: empty) and whether its tail was
// cut.
func checkSegment(pdir string, base, prevEnd int64, compacted, last bool, log *slog.Logger) (int64, bool, error) {
	segPath := filepath.Join(pdir, strconv.FormatInt(base, 10)+".dat")
	idxPath := filepath.Join(pdir, strconv.FormatInt(base, 10)+".idx")
	raw, err := os.ReadFile(segPath)
	if err != nil {
		return -1, false, fmt.Errorf("embedded: %w", err)
	}
	idx, err := os.ReadFile(idxPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return -1, false, fmt.Errorf("embedded: %w", err)
	}
	if len(raw) > 0 && prevEnd >= 0 && base < prevEnd {
		return -1, false, &DamageError{File: segPath, Offset: -1, Reason: fmt.Sprintf("its base offset %d overlaps the previous segment, which ends at offset %d", base, prevEnd)}
	}
	if len(raw) > 0 && prevEnd >= 0 && !compacted && base != prevEnd {
		return -1, false, &DamageError{File: segPath, Offset: -1, Reason: fmt.Sprintf("offsets %d to %d are missing before it (a segment deleted?)", prevEnd, base-1)}
	}
	pos, n := 0, 0
	end := int64(-1)
	var bad string
	partial := false // the bytes from pos on are less than the batch they start
	for pos < len(raw) {
		if pos+12 > len(raw) {
			bad, partial = "a partial batch header", true
			break
		}
		first := int64(binary.BigEndian.Uint64(raw[pos:]))
		length := int(int32(binary.BigEndian.Uint32(raw[pos+8:])))
		if length < batchHeader-12 || length > 1<<30 {
			bad = fmt.Sprintf("a batch length of %d bytes", length)
			break
		}
		if pos+12+length > len(raw) {
			if len(raw) >= pos+21 && crc32.Checksum(raw[pos+21:], crc32c) == binary.BigEndian.Uint32(raw[pos+17:]) {
				return -1, false, &DamageError{File: segPath, Offset: int64(pos), Reason: "a whole batch whose length field is wrong"}
			}
			bad, partial = "a partial batch", true
			break
		}
		b := raw[pos : pos+12+length]
		if b[16] != 2 {
			bad = fmt.Sprintf("a batch of magic %d (2 expected)", b[16])
			break
		}
		if crc32.Checksum(b[21:], crc32c) != binary.BigEndian.Uint32(b[17:]) {
			bad = "a batch whose CRC32C does not match its contents"
			break
		}
		delta := int64(int32(binary.BigEndian.Uint32(b[23:])))
		switch {
		case n == 0 && first != base:
			bad = fmt.Sprintf("its first batch starts at offset %d, not at the segment's base %d", first, base)
		case end >= 0 && first < end:
			bad = fmt.Sprintf("a batch at offset %d after one ending at %d", first, end)
		case end >= 0 && !compacted && first != end:
			bad = fmt.Sprintf("a batch at offset %d after one ending at %d: offsets %d to %d are missing", first, end, end, first-1)
		case delta < 0:
			bad = fmt.Sprintf("a batch with a negative last offset delta %d", delta)
		}
		if bad != "" {
			return -1, false, &DamageError{File: segPath, Offset: int64(pos), Reason: bad}
		}
		if !validIdxEntry(idx, n) {
			bad = "a batch without a valid entry in " + filepath.Base(idxPath)
			break
		}
		end = first + delta + 1
		pos += 12 + length
		n++
	}
	whole := len(idx) / idxEntrySize
	if pos == len(raw) {
		if last && whole == n+1 {
			// The last batch's bytes all gone but its .idx entry there:
			// the partial batch below with none of its bytes left.
			if err := os.Truncate(idxPath, int64(n*idxEntrySize)); err != nil {
				return -1, false, fmt.Errorf("embedded: repair %s: %w", idxPath, err)
			}
			warnRepaired(log, segPath, int64(pos), 0, "an entry in "+filepath.Base(idxPath)+" for a last batch none of whose bytes are there")
			return end, true, nil
		}
		if whole > n {
			return -1, false, &DamageError{File: segPath, Offset: int64(pos),
				Reason: fmt.Sprintf("%s lists %d batches but only %d are there: acknowledged batches are missing at its end", filepath.Base(idxPath), whole, n)}
		}
		return end, false, nil // a partial .idx entry after the last is kfake's to cut
	}
	// Stopped at batch n, byte pos. A torn tail is the last segment's last
	// batch: partial (its .idx entry, written after it, at most there
	// too), or all its bytes there but no whole .idx entry for it (a batch
	// never acknowledged; its bytes may also not have reached the disk).
	torn := false
	if last && partial {
		torn = whole <= n+1
	} else if last && len(idx) < (n+1)*idxEntrySize {
		length := int(int32(binary.BigEndian.Uint32(raw[pos+8:])))
		torn = length >= batchHeader-12 && pos+12+length == len(raw)
	}
	if !torn {
		if last && len(idx) >= (n+1)*idxEntrySize {
			bad += fmt.Sprintf(" (%s has its entry: it was written whole, and acknowledged)", filepath.Base(idxPath))
		}
		return -1, false, &DamageError{File: segPath, Offset: int64(pos), Reason: bad}
	}
	if err := truncateTail(segPath, int64(pos), int64(len(raw)-pos), bad, log); err != nil {
		return -1, false, err
	}
	if len(idx) > n*idxEntrySize {
		if err := os.Truncate(idxPath, int64(n*idxEntrySize)); err != nil {
			return -1, false, fmt.Errorf("embedded: repair %s: %w", idxPath, err)
		}
	}
	return end, true, nil
}

// validIdxEntry reports whether idx holds a valid entry for batch n
// (kfake's format: version, low byte of the CRC32C of the other 13
// bytes, epoch, timestamp, flags).
func validIdxEntry(idx []byte, n int) bool {
	off := n * idxEntrySize
	if off+idxEntrySize > len(idx) {
		return false
	}
	e := idx[off : off+idxEntrySize]
	return e[0] == 1 && byte(crc32.Checksum(e[2:], crc32c)) == e[1]
}

// truncateTail cuts path at pos, dropping n bytes, and says so.
func truncateTail(path string, pos, n int64, what string, log *slog.Logger) error {
	if err := os.Truncate(path, pos); err != nil {
		return fmt.Errorf("embedded: repair %s: %w", path, err)
	}
	warnRepaired(log, path, pos, n, what)
	return nil
}

// warnRepaired says that a torn tail of path was cut at pos, n bytes
// dropped.
func warnRepaired(log *slog.Logger, path string, pos, n int64, what string) {
	log.Warn("embedded: repaired a torn tail (the trace of a stop in the middle of a write): what was written last, unacknowledged or not synced, is gone",
		"file", path, "at", pos, "bytes_dropped", n, "found", what)
}

// clampCommits lowers the group commits beyond the new end of a partition
// whose tail was cut to that end: a consumer that had read the rows cut
// off would otherwise fetch past the end, reset, and skip (or re-read)
// rows; at the end it reads what is written next.
func clampCommits(path string, ends map[topicPart]int64, log *slog.Logger) error {
	if len(ends) == 0 {
		return nil
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	var out []byte
	changed := false
	for pos := 0; pos < len(raw); {
		n, ok := logEntryAt(raw, pos)
		if !ok {
			return fmt.Errorf("embedded: %s: unreadable entry at byte %d after its check", path, pos)
		}
		entry := raw[pos : pos+n]
		pos += n
		var e struct {
			Type   string `json:"type"`
			Group  string `json:"g"`
			Topic  string `json:"t"`
			Part   int32  `json:"p"`
			Offset int64  `json:"o"`
		}
		data := entry[logEntryHead:]
		if json.Unmarshal(data, &e) != nil || e.Type != "commit" {
			out = append(out, entry...)
			continue
		}
		end, ok := ends[topicPart{e.Topic, e.Part}]
		if !ok || e.Offset <= end {
			out = append(out, entry...)
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("embedded: %s: %w", path, err)
		}
		m["o"] = json.RawMessage(strconv.FormatInt(end, 10))
		nd, err := json.Marshal(m)
		if err != nil {
			return err
		}
		frame := make([]byte, logEntryHead, logEntryHead+len(nd))
		binary.LittleEndian.PutUint32(frame, uint32(2+len(nd)))
		copy(frame[8:10], entry[8:10]) // the entry's version
		frame = append(frame, nd...)
		binary.LittleEndian.PutUint32(frame[4:], crc32.Checksum(frame[8:], crc32c))
		out = append(out, frame...)
		changed = true
		log.Warn("embedded: a group's committed offset was past the end of a partition whose tail was cut; lowered to the end",
			"file", path, "group", e.Group, "topic", e.Topic, "partition", e.Part, "committed", e.Offset, "now", end)
	}
	if !changed {
		return nil
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		return fmt.Errorf("embedded: repair %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("embedded: repair %s: %w", path, err)
	}
	return nil
}
