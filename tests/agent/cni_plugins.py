#!/usr/bin/env python3
"""cni_plugins.py - runs the agent's written CNI configuration through the real plugins.

Called by test_cni_plugins.sh inside a network namespace (and mount namespace) of its
own, which stands for the node. It does for one pod what containerd's CRI does through
go-cni and libcni: the pod is a second network namespace (a `sleep` under
`unshare -n`); containerd's own loopback network first (cniVersion 0.3.1, `loopback`
on `lo`), then the list's plugins in order with ADD, each given the list's name and
cniVersion, the previous plugin's result as prevResult and, for the capabilities it
declares, the runtime's values (portMappings: host port 18080 to the pod's 80); DEL
in reverse order at the end, with the list's result as prevResult. It checks what a pod needs: its address from the range on
eth0, a default route through the bridge, the bridge holding the gateway address,
masquerading of what leaves the range, a TCP connection from the node to the pod's
address and through the host port (portmap's DNAT), and that DEL takes the address
back and the rules away.

Usage: cni_plugins.py CONFLIST BIN_DIR POD_CIDR
Prints one line per check; exits 1 when one fails.
"""
import ipaddress
import json
import os
import socket
import subprocess
import sys
import time

conflist_path, bin_dir, pod_cidr = sys.argv[1:4]
conf = json.load(open(conflist_path))
net = ipaddress.ip_network(pod_cidr)
gateway = str(net.network_address + 1)
pod_ip = str(net.network_address + 2)
failures = 0


def check(desc, ok, detail=""):
    global failures
    print(("ok: " if ok else "FAIL: ") + desc + ("" if ok else " " + str(detail)))
    if not ok:
        failures += 1


def run(*argv, netns=None):
    if netns:
        argv = ("nsenter", "--net=" + netns) + argv
    return subprocess.run(argv, capture_output=True, text=True).stdout


def plugin(ptype, command, config, netns, ifname):
    env = dict(os.environ, CNI_COMMAND=command, CNI_CONTAINERID="ckube-test",
               CNI_NETNS=netns, CNI_IFNAME=ifname, CNI_PATH=bin_dir)
    p = subprocess.run([os.path.join(bin_dir, ptype)], input=json.dumps(config).encode(),
                       env=env, capture_output=True)
    if p.returncode != 0:
        check("%s %s" % (ptype, command), False, p.stdout.decode() + p.stderr.decode())
        return None
    return json.loads(p.stdout) if p.stdout.strip() else {}


RUNTIME = {"portMappings": [{"hostPort": 18080, "containerPort": 80, "protocol": "tcp"}]}


def one_config(p, prev):
    """A list's plugin as libcni hands it over: the list's name and version, the runtime's
    values of the capabilities it declares, the previous result."""
    c = dict(p, name=conf["name"], cniVersion=conf["cniVersion"])
    caps = {k: RUNTIME[k] for k, on in p.get("capabilities", {}).items() if on and k in RUNTIME}
    if caps:
        c["runtimeConfig"] = caps
    if prev is not None:
        c["prevResult"] = prev
    return c


run("ip", "link", "set", "lo", "up")
pod = subprocess.Popen(["unshare", "-n", "sleep", "120"])
try:
    netns = "/proc/%d/ns/net" % pod.pid
    for _ in range(100):  # until unshare has made the namespace and exec'd sleep
        if os.readlink(netns) != os.readlink("/proc/self/ns/net"):
            break
        time.sleep(0.02)

    loopback = {"cniVersion": "0.3.1", "name": "cni-loopback", "type": "loopback"}
    check("containerd's loopback network", plugin("loopback", "ADD", loopback, netns, "lo") is not None)

    prev = None
    for p in conf["plugins"]:
        result = plugin(p["type"], "ADD", one_config(p, prev), netns, "eth0")
        if result is None:
            sys.exit(1)
        prev = result

    lease = "/var/lib/cni/networks/%s/%s" % (conf["name"], pod_ip)
    check("host-local keeps the pod's address under its data directory", os.path.exists(lease), lease)
    ips = [ip["address"] for ip in prev.get("ips", [])]
    check("the pod's address is the range's second", ips == [pod_ip + "/%d" % net.prefixlen], ips)
    out = run("ip", "-4", "-o", "addr", "show", "dev", "eth0", netns=netns)
    check("eth0 in the pod holds it", (" %s/%d " % (pod_ip, net.prefixlen)) in out, out)
    out = run("ip", "-4", "-o", "addr", "show", "dev", "lo", netns=netns)
    check("the pod's lo is up with 127.0.0.1", " 127.0.0.1/8 " in out, out)
    out = run("ip", "route", netns=netns)
    check("the pod's default route goes through the gateway", ("default via %s dev eth0" % gateway) in out, out)
    out = run("ip", "-4", "-o", "addr", "show", "dev", "ckube0")
    check("the bridge ckube0 holds the gateway", (" %s/%d " % (gateway, net.prefixlen)) in out, out)
    nat = run("iptables", "-t", "nat", "-S")
    check("what the pod sends outside the range is masqueraded",
          ("-s %s/32" % pod_ip) in nat and "-j MASQUERADE" in nat, nat)
    check("the host port is DNAT'ed to the pod", ("--to-destination %s:80" % pod_ip) in nat, nat)

    server = subprocess.Popen(
        ["nsenter", "--net=" + netns, sys.executable, "-c",
         "import socket\n"
         "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
         "s.bind(('0.0.0.0', 80)); s.listen(4); print('ready', flush=True)\n"
         "for _ in range(2):\n"
         "    c, _ = s.accept(); c.sendall(b'pod'); c.close()\n"],
        stdout=subprocess.PIPE, text=True)
    try:
        check("a server listens in the pod", server.stdout.readline().strip() == "ready")
        for desc, addr in (("the node reaches the pod's address", (pod_ip, 80)),
                           ("the node reaches the pod through the host port", (gateway, 18080))):
            try:
                with socket.create_connection(addr, timeout=5) as s:
                    got = s.recv(16)
                check(desc, got == b"pod", got)
            except OSError as e:
                check(desc, False, e)
    finally:
        server.kill()
        server.wait()

    # DEL as libcni sends it from CNI 0.4.0 on: the list's cached result as prevResult
    for p in reversed(conf["plugins"]):
        check("%s DEL" % p["type"], plugin(p["type"], "DEL", one_config(p, prev), netns, "eth0") is not None)
    nat = run("iptables", "-t", "nat", "-S")
    check("DEL leaves no rule for the pod", pod_ip not in nat, nat)
    check("DEL gives the address back", not os.path.exists(lease), lease)
finally:
    pod.kill()
    pod.wait()

sys.exit(1 if failures else 0)
