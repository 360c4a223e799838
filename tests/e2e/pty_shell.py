#!/usr/bin/env python3
# pty_shell.py - `kubectl exec -it POD -- sh` (or another kubectl command that gives a
# shell: `kubectl attach -it`, `kubectl run -it`) driven from a pseudo-terminal of 33
# rows and 101 columns, as a person at a terminal would: types `echo $((6*7)); tty; stty
# size`, waits for the answer (with no answer in 10 s, presses enter and types it again,
# as kubectl advises, and says so with a RETYPED line), then `exit 0`. Prints what the
# terminal showed, then "EXIT <kubectl's exit code>". For the end-to-end tests of exec
# and attach on either runtime.
#
# Usage: pty_shell.py POD
#        pty_shell.py -- kubectl ARGS...
import fcntl
import os
import pty
import select
import struct
import sys
import termios
import time

pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 101, 0, 0))
    if sys.argv[1] == "--":
        os.execvp(sys.argv[2], sys.argv[2:])
    os.execvp("kubectl", ["kubectl", "exec", "-it", sys.argv[1], "--", "sh"])
out = b""


def read_for(seconds, until=None):
    global out
    end = time.time() + seconds
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                data = os.read(fd, 4096)
            except OSError:
                return
            if not data:
                return
            out += data
            if until and until in out:
                return


time.sleep(1.5)
os.write(fd, b"echo $((6*7)); tty; stty size\r")
read_for(10, b"33 101")
retyped = b"33 101" not in out
if retyped:  # as kubectl says: "If you don't see a command prompt, try pressing enter."
    os.write(fd, b"\recho $((6*7)); tty; stty size\r")
    read_for(15, b"33 101")
read_for(1)
os.write(fd, b"exit 0\r")
read_for(15)
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
if retyped:
    print("\nRETYPED: no answer in 10 s, so enter was pressed and the line typed again")
print("\nEXIT", os.waitstatus_to_exitcode(status))
