package cutter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sshrig/sshrig/fault"
	"github.com/sshrig/sshrig/internal/kernelnet"
)

// newKernelRig is newRig on the kernel network: the cutter listens in the
// server's namespace and hands its kernel cuts to the kernel; clients dial
// from the tool's namespace. It skips where no kernel network can be made
// (fails under SSHRIG_REQUIRE_NETNS=1).
func newKernelRig(t *testing.T) (*rig, *kernelnet.Net) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	kn, err := kernelnet.New(ctx)
	if errors.Is(err, kernelnet.ErrNeedsPrivilege) && os.Getenv("SSHRIG_REQUIRE_NETNS") != "1" {
		t.Skipf("no kernel network here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := kn.Close(); err != nil {
			t.Errorf("kernel network close: %v", err)
		}
	})
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, ln: ln, conns: make(chan accepted, 1024), done: make(chan struct{}), kernel: kn}
	go r.serve()
	cl, err := kn.Listen()
	if err == nil {
		r.cut, err = ListenOn(cl, ln.Addr().String(), testCase, WithKernel(kn))
	}
	if err != nil {
		ln.Close()
		<-r.done
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.close()
		// Every cut's table went with the cutter's Close.
		if names, err := kn.Tables(); err != nil || len(names) != 0 {
			t.Errorf("tables left after the cutter closed: %v %v", names, err)
		}
	})
	return r, kn
}

// kernelCutAndCheck is cutAndCheck for the kernel cuts: every byte up to
// the flush reaches the tool, then (full) the tool's kernel meets the
// kind's fault.
func kernelCutAndCheck(t *testing.T, r *rig, kind fault.Cut, size int, full bool) {
	t.Helper()
	client, server, n := cutAtFlush(t, r, kind, size, func(client *net.TCPConn) {
		rc, err := client.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		rc.Control(func(fd uintptr) {
			// The tool's own kernel gives up on unacknowledged data
			// after 300 ms: what a blackhole does to it shows at once.
			if err := unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, 300); err != nil {
				t.Fatal(err)
			}
		})
	})
	if st := connStateOf(t, r.cut, n); st != "cut:"+kind.String() {
		t.Errorf("state %q", st)
	}
	if !full {
		return
	}
	switch kind {
	case fault.Blackhole:
		// The tool's data is never acknowledged: its kernel times out.
		if _, err := client.Write([]byte("anyone?")); err != nil {
			t.Fatal(err)
		}
		if err := readErr(t, client); !errors.Is(err, syscall.ETIMEDOUT) {
			t.Errorf("tool's read after a kernel blackhole: %v, want ETIMEDOUT", err)
		}
	case fault.Reset:
		if err := readErr(t, client); !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("tool's read after a kernel reset: %v, want ECONNRESET", err)
		}
		if err := readErr(t, server); !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("server's read after a kernel reset: %v, want ECONNRESET", err)
		}
	case fault.Vanish:
		// Silent until the tool sends; then the kernel's RST. Reading
		// the bytes above may have sent a window update already, which
		// met the RST: then the write reports it, and the read sees the
		// connection over.
		_, werr := client.Write([]byte("anyone?"))
		if werr != nil && !errors.Is(werr, syscall.ECONNRESET) {
			t.Fatal(werr)
		}
		if rerr := readErr(t, client); !errors.Is(werr, syscall.ECONNRESET) && !errors.Is(rerr, syscall.ECONNRESET) {
			t.Errorf("tool after vanish: write %v, read %v; want ECONNRESET from one", werr, rerr)
		}
		if err := readErr(t, server); !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("server's read after vanish: %v, want ECONNRESET", err)
		}
	}
}

func TestKernelCut(t *testing.T) {
	for _, kind := range fault.KernelCuts() {
		for _, size := range []int{1, 64 << 10} {
			t.Run(fmt.Sprintf("%v/%d", kind, size), func(t *testing.T) {
				r, _ := newKernelRig(t)
				kernelCutAndCheck(t, r, kind, size, true)
			})
		}
	}
}

// Each kernel cut lands at its flush 200 times in 200, on one cutter. A
// blackhole's full check waits out the tool's kernel (TestKernelCut does
// it); here each blackhole must leave its table in place instead.
func TestKernelCutRepeat(t *testing.T) {
	const runs = 200
	for _, kind := range fault.KernelCuts() {
		t.Run(kind.String(), func(t *testing.T) {
			r, kn := newKernelRig(t)
			for i := 0; i < runs && !t.Failed(); i++ {
				kernelCutAndCheck(t, r, kind, 1500, kind != fault.Blackhole)
			}
			if got := len(r.cut.Stats()); got != runs {
				t.Errorf("%d connections, want %d", got, runs)
			}
			names, err := kn.Tables()
			want := map[fault.Cut]int{fault.Blackhole: runs, fault.Reset: runs, fault.Vanish: 0}[kind]
			if err != nil || len(names) != want {
				t.Errorf("%d tables while the cutter is open (%v), want %d", len(names), err, want)
			}
		})
	}
}

// Close, kill-helper and the proxy's own cuts stay the cutter's on the
// kernel network; vanish is refused without it.
func TestVanishNeedsTheKernel(t *testing.T) {
	r := newRig(t)
	_, server := r.dial()
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	if _, err := r.cut.Cut(ctx, server.pre.Conn, fault.Vanish, 0); !errors.Is(err, ErrNeedsKernel) {
		t.Fatalf("vanish on the proxy: %v, want ErrNeedsKernel", err)
	}
}

func TestKernelClose(t *testing.T) {
	r, _ := newKernelRig(t)
	client, server := r.dial()
	ctx, cancel := context.WithTimeout(context.Background(), safety)
	defer cancel()
	if _, err := r.cut.Cut(ctx, server.pre.Conn, fault.Close, 0); err != nil {
		t.Fatal(err)
	}
	if err := readErr(t, client); err != io.EOF {
		t.Errorf("tool's read after close: %v, want EOF", err)
	}
}
