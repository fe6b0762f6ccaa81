package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Usage is a process's resource figures at one moment, with the peaks
// since the last reset.
type Usage struct {
	RSS      int64         // resident set size now, bytes (VmRSS)
	PeakRSS  int64         // VmHWM since the last reset, bytes
	Heap     int64         // Go heap in use now, bytes (-1: unknown)
	PeakHeap int64         // highest sampled Go heap in use since the last reset (-1: unknown)
	CPU      time.Duration // user+system CPU time of the process since it started
}

// procStatus reads VmRSS and VmHWM of a process ("self" or a pid).
func procStatus(pid string) (rss, hwm int64, err error) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0, 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		for _, f := range []struct {
			name string
			dst  *int64
		}{{"VmRSS:", &rss}, {"VmHWM:", &hwm}} {
			if rest, ok := strings.CutPrefix(line, f.name); ok {
				fs := strings.Fields(rest)
				if len(fs) >= 1 {
					kb, _ := strconv.ParseInt(fs[0], 10, 64)
					*f.dst = kb << 10
				}
			}
		}
	}
	if hwm == 0 {
		return rss, hwm, errors.New("no VmHWM in /proc/" + pid + "/status")
	}
	return rss, hwm, nil
}

// resetPeakRSS makes VmHWM equal to the current RSS (Linux ≥ 4.0).
func resetPeakRSS(pid string) error {
	return os.WriteFile("/proc/"+pid+"/clear_refs", []byte("5"), 0)
}

// procCPU reads a process's user+system CPU time from /proc/<pid>/stat.
func procCPU(pid string) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces: fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("bad /proc stat")
	}
	fs := strings.Fields(string(b[i+1:]))
	// After ')': state(3) ... utime is field 14, stime 15 (1-based overall).
	if len(fs) < 13 {
		return 0, errors.New("short /proc stat")
	}
	ut, _ := strconv.ParseInt(fs[11], 10, 64)
	st, _ := strconv.ParseInt(fs[12], 10, 64)
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

// selfCPU is this process's user+system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// HostCPU is the busy CPU time of the whole machine (every process, every
// core: user, nice, system, irq, softirq, steal) from /proc/stat.
func HostCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	fs := strings.Fields(string(line))
	if len(fs) < 9 || fs[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, f := range fs[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 8 { // guest time is already counted in user
			break
		}
		n, _ := strconv.ParseInt(f, 10, 64)
		busy += n
	}
	return time.Duration(busy) * time.Second / clockTicks
}

// heapWatch samples this process's Go heap in use every 10 ms and keeps
// the peak since the last reset. runtime/metrics reads do not stop the
// world, so sampling costs next to nothing.
var heapWatch struct {
	once sync.Once
	peak atomic.Int64

	profMu   sync.Mutex
	profPath string // write heap profiles at new peaks here ("": off)
	profAt   int64  // heap in use when the last one was written
}

// StartHeapProfile makes the sampler write a heap profile (inuse_space as
// of the last GC) to path whenever the heap in use reaches a new peak 25%
// above the last one written (and at least 16 MiB): the file ends up
// describing the phase's peak.
func StartHeapProfile(path string) {
	startHeapWatch()
	heapWatch.profMu.Lock()
	defer heapWatch.profMu.Unlock()
	heapWatch.profPath, heapWatch.profAt = path, 0
}

// StopHeapProfile stops writing heap profiles.
func StopHeapProfile() {
	heapWatch.profMu.Lock()
	defer heapWatch.profMu.Unlock()
	heapWatch.profPath = ""
}

func maybeHeapProfile(h int64) {
	heapWatch.profMu.Lock()
	defer heapWatch.profMu.Unlock()
	if heapWatch.profPath == "" || h < 16<<20 || h < heapWatch.profAt+heapWatch.profAt/4 {
		return
	}
	f, err := os.Create(heapWatch.profPath)
	if err != nil {
		return
	}
	_ = pprof.Lookup("heap").WriteTo(f, 0)
	f.Close()
	heapWatch.profAt = h
}

var heapSamples = []metrics.Sample{
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/memory/classes/heap/unused:bytes"},
}

var heapMu sync.Mutex

// heapInUse is the Go heap's in-use spans (live and not yet swept objects
// plus free slots in in-use spans), as MemStats.HeapInuse.
func heapInUse() int64 {
	heapMu.Lock()
	defer heapMu.Unlock()
	metrics.Read(heapSamples)
	var n int64
	for _, s := range heapSamples {
		if s.Value.Kind() == metrics.KindUint64 {
			n += int64(s.Value.Uint64())
		}
	}
	return n
}

func startHeapWatch() {
	heapWatch.once.Do(func() {
		heapWatch.peak.Store(heapInUse())
		go func() {
			t := time.NewTicker(10 * time.Millisecond)
			defer t.Stop()
			for range t.C {
				h := heapInUse()
				maybeHeapProfile(h)
				for {
					p := heapWatch.peak.Load()
					if h <= p || heapWatch.peak.CompareAndSwap(p, h) {
						break
					}
				}
			}
		}()
	})
}

// SelfUsage returns this process's figures.
func SelfUsage() Usage {
	startHeapWatch()
	rss, hwm, _ := procStatus("self")
	h := heapInUse()
	peak := max(heapWatch.peak.Load(), h)
	return Usage{RSS: rss, PeakRSS: hwm, Heap: h, PeakHeap: peak, CPU: selfCPU()}
}

// ResetSelfPeaks collects garbage, returns free memory to the OS, and
// starts new peaks from the current RSS and heap.
func ResetSelfPeaks() error {
	startHeapWatch()
	runtime.GC()
	debug.FreeOSMemory()
	heapWatch.peak.Store(heapInUse())
	return resetPeakRSS("self")
}

// PIDUsage returns another process's figures (no Go heap).
func PIDUsage(pid int) (Usage, error) {
	p := strconv.Itoa(pid)
	rss, hwm, err := procStatus(p)
	if err != nil {
		return Usage{}, err
	}
	cpu, err := procCPU(p)
	if err != nil {
		return Usage{}, err
	}
	return Usage{RSS: rss, PeakRSS: hwm, Heap: -1, PeakHeap: -1, CPU: cpu}, nil
}

// ResetPIDPeaks resets another process's VmHWM.
func ResetPIDPeaks(pid int) error { return resetPeakRSS(strconv.Itoa(pid)) }

// MiB formats bytes as mebibytes ("-" when unknown).
func MiB(b int64) string {
	if b < 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
}
