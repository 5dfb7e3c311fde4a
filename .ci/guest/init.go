// Command init is PID 1 of the throwaway Linux guest that .ci/avx512-bochs
// boots under Bochs: it runs each line of /args as a command (leading
// NAME=value words set its environment, CWD=dir its directory), prints how each ended, and powers
// the guest off so that the emulator exits.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

func main() {
	syscall.Mount("proc", "/proc", "proc", 0, "")
	syscall.Mount("devtmpfs", "/dev", "devtmpfs", 0, "")
	syscall.Mount("tmpfs", "/tmp", "tmpfs", 0, "")
	args, err := os.ReadFile("/args")
	if err != nil {
		fmt.Println("guest: no /args:", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(args)), "\n") {
		f := strings.Fields(line)
		var env []string
		for len(f) > 1 && strings.Contains(f[0], "=") {
			env = append(env, f[0])
			f = f[1:]
		}
		if len(f) == 0 {
			continue
		}
		fmt.Println("=== guest run:", line)
		c := exec.Command(f[0], f[1:]...)
		c.Stdout, c.Stderr = os.Stdout, os.Stderr
		c.Dir = "/work/repo"
		c.Env = []string{"HOME=/tmp", "TMPDIR=/tmp", "PATH=/bin"}
		for _, kv := range env {
			if dir, ok := strings.CutPrefix(kv, "CWD="); ok {
				c.Dir = dir
			} else {
				c.Env = append(c.Env, kv)
			}
		}
		err := c.Run()
		status := "ok"
		if err != nil {
			status = err.Error()
		}
		fmt.Println("=== guest exit:", status)
	}
	fmt.Println("=== guest done")
	// The serial port drains at its baud rate; power off only after it has.
	time.Sleep(3 * time.Second)
	syscall.Sync()
	syscall.Reboot(syscall.LINUX_REBOOT_CMD_POWER_OFF)
}
