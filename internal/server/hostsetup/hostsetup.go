package hostsetup

import "syscall"

// Env, set to "1", makes a process run the set-up step. It is removed from
// the command's environment.
const Env = "SSHRIG_HOST_SETUP"

// Arg0 is the step's argv[0], for people reading a process list.
const Arg0 = "sshrig-host-setup"

// Argv is the step's argv: it puts tmp over /tmp, binds each of keep back
// at its own path, enters dir and executes argv (argv[0] a path).
func Argv(tmp, dir string, keep, argv []string) []string {
	out := []string{Arg0, tmp, dir, itoa(len(keep))}
	out = append(out, keep...)
	return append(out, argv...)
}

func init() {
	if v, ok := syscall.Getenv(Env); !ok || v != "1" {
		return
	}
	args, err := cmdline()
	if err == nil {
		err = run(args)
	}
	msg := "sshrig: the host's set-up failed: " + errText(err) + "\n"
	syscall.Write(2, []byte(msg))
	syscall.Exit(126)
}

// cmdline is the process's argv, from /proc (the os package, which would
// hold it, is initialized later).
func cmdline() ([]string, error) {
	fd, err := syscall.Open("/proc/self/cmdline", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	var data []byte
	buf := make([]byte, 4096)
	for {
		n, err := syscall.Read(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		data = append(data, buf[:n]...)
	}
	var args []string
	start := 0
	for i, b := range data {
		if b == 0 {
			args = append(args, string(data[start:i]))
			start = i + 1
		}
	}
	return args, nil
}

// oPath is Linux's O_PATH, which package syscall does not name: a
// descriptor that only holds a place in the file tree.
const oPath = 0x200000

type problem string

func (p problem) Error() string { return string(p) }

func errText(err error) string {
	if err == nil {
		return "the command did not start"
	}
	return err.Error()
}

func wrap(what string, err error) error { return problem(what + ": " + err.Error()) }

// run is the step: args is the process's argv (Argv's).
func run(args []string) error {
	if len(args) < 5 {
		return problem("too few arguments")
	}
	tmp, dir := args[1], args[2]
	n, ok := atoi(args[3])
	if !ok || len(args) < 4+n+1 {
		return problem("bad arguments")
	}
	keep, argv := args[4:4+n], args[4+n:]
	if err := MountTmp(tmp, keep); err != nil {
		return err
	}
	if err := syscall.Chdir(dir); err != nil {
		return wrap("enter "+dir, err)
	}
	var env []string
	for _, kv := range syscall.Environ() {
		if len(kv) < len(Env)+1 || kv[:len(Env)+1] != Env+"=" {
			env = append(env, kv)
		}
	}
	return wrap("exec "+argv[0], syscall.Exec(argv[0], argv, env))
}

// MountTmp makes the calling process's mount namespace (one of its own)
// private, binds tmp over /tmp and binds each of keep (directories under
// /tmp that must stay reachable: the scratch directory, the gates) back at
// its path. The server's per-case thread and this set-up step both use it.
func MountTmp(tmp string, keep []string) error {
	// Nothing mounted here may reach the machine's namespace.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return wrap("make / private", err)
	}
	// Held open across the mount over /tmp, which hides their paths.
	fds := make([]int, 0, len(keep))
	defer func() {
		for _, fd := range fds {
			syscall.Close(fd)
		}
	}()
	for _, k := range keep {
		fd, err := syscall.Open(k, oPath|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return wrap("open "+k, err)
		}
		fds = append(fds, fd)
	}
	if err := syscall.Mount(tmp, "/tmp", "", syscall.MS_BIND, ""); err != nil {
		return wrap("bind "+tmp+" over /tmp", err)
	}
	for i, k := range keep {
		if err := mkdirAll(k); err != nil {
			return wrap("mount point "+k, err)
		}
		if err := syscall.Mount("/proc/self/fd/"+itoa(fds[i]), k, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return wrap("bind "+k+" back", err)
		}
	}
	return nil
}

// mkdirAll creates p and its missing parents.
func mkdirAll(p string) error {
	for i := 1; i <= len(p); i++ {
		if i < len(p) && p[i] != '/' {
			continue
		}
		err := syscall.Mkdir(p[:i], 0o755)
		if err != nil && err != syscall.EEXIST {
			return err
		}
	}
	return nil
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

func atoi(s string) (int, bool) {
	if s == "" || len(s) > 6 {
		return 0, false
	}
	n := 0
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
