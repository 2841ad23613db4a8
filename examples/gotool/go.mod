module github.com/sshrig/sshrig/examples/gotool

go 1.26.0

require (
	github.com/sshrig/sshrig v0.0.0
	go.uber.org/goleak v1.3.0
	golang.org/x/crypto v0.59.0
)

require (
	github.com/anmitsu/go-shlex v0.0.0-20200514113438-38f4b401e2be // indirect
	github.com/creack/pty v1.1.24 // indirect
	github.com/gliderlabs/ssh v0.3.8 // indirect
	github.com/goccy/go-yaml v1.19.2 // indirect
	github.com/kr/fs v0.1.0 // indirect
	github.com/pkg/sftp v1.13.12 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/sshrig/sshrig => ../..
