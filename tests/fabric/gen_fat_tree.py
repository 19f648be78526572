#!/usr/bin/env python3
"""Fat trees in ibnetdiscover's net-file format, for ibsim (tests/fabric/README.md).

  gen_fat_tree.py --levels 2 --hosts 128 [--half-leaf] [--one-x] [--fail-link] > net

Two levels: leaves with d host ports and d up-links, one to each of d spines (full bisection);
d is the smallest power of two with d*d >= hosts. Three levels: the k-ary fat tree (k pods of
k/2 edge and k/2 aggregation switches, (k/2)^2 core switches, k^3/4 hosts), k the smallest even
number with k^3/4 >= hosts. Hosts beyond --hosts are left off the last leaves.

--half-leaf: the last leaf keeps only half of its hosts (a partially populated leaf).
--one-x:     the first leaf's first up-link is trained at 1x instead of 4x.
--fail-link: the last leaf's first up-link is left out (a failed cable: both ports unlinked),
             so the subnet manager routes around it.

Width and speed go in the port lines' comments ("# ... lid 0 4xHDR"): ibsim 0.10 reads the
enabled width and speed from there (parse_port_link_width_and_speed in its sim_net.c).
"""
import argparse
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--levels", type=int, choices=(2, 3), required=True)
    ap.add_argument("--hosts", type=int, required=True)
    ap.add_argument("--half-leaf", action="store_true")
    ap.add_argument("--one-x", action="store_true")
    ap.add_argument("--fail-link", action="store_true")
    ap.add_argument("--speed", default="HDR")
    a = ap.parse_args()

    switches = {}  # name -> {port: (remote, rport, width)}
    hosts = {}  # name -> (switch, port, width)
    nports = {}

    def link(s1, p1, s2, p2, width=4):
        switches[s1][p1] = (s2, p2, width)
        switches[s2][p2] = (s1, p1, width)

    leaves = []  # (leaf name, host ports)
    if a.levels == 2:
        d = 2
        while d * d < a.hosts:
            d *= 2
        n_leaves = -(-a.hosts // d)
        for s in range(d):
            name = "spine%02d" % (s + 1)
            switches[name] = {}
            nports[name] = max(n_leaves, 2)
        for l in range(n_leaves):
            name = "leaf%02d" % (l + 1)
            switches[name] = {}
            nports[name] = 2 * d
            leaves.append((name, list(range(1, d + 1))))
            for s in range(d):
                link(name, d + 1 + s, "spine%02d" % (s + 1), l + 1)
    else:
        k = 4
        while k ** 3 // 4 < a.hosts:
            k += 2
        h = k // 2
        for c in range(h * h):
            name = "core%03d" % (c + 1)
            switches[name] = {}
            nports[name] = k
        for p in range(k):
            for e in range(h):
                switches["p%02dedge%02d" % (p + 1, e + 1)] = {}
                switches["p%02dagg%02d" % (p + 1, e + 1)] = {}
                nports["p%02dedge%02d" % (p + 1, e + 1)] = k
                nports["p%02dagg%02d" % (p + 1, e + 1)] = k
            for e in range(h):
                edge = "p%02dedge%02d" % (p + 1, e + 1)
                leaves.append((edge, list(range(1, h + 1))))
                for g in range(h):
                    link(edge, h + 1 + g, "p%02dagg%02d" % (p + 1, g + 1), e + 1)
            for g in range(h):
                agg = "p%02dagg%02d" % (p + 1, g + 1)
                for c in range(h):
                    # Aggregation switch g of every pod reaches core switches g*h .. g*h+h-1.
                    link(agg, h + 1 + c, "core%03d" % (g * h + c + 1), p + 1)

    if a.one_x:
        first = leaves[0][0]
        up = min(p for p in switches[first])
        r, rp, _ = switches[first][up]
        link(first, up, r, rp, width=1)

    if a.fail_link:
        last = leaves[-1][0]
        up = min(p for p in switches[last])
        r, rp, _ = switches[last][up]
        del switches[last][up]
        del switches[r][rp]

    # Hosts, leaf by leaf.
    n = 0
    for i, (leaf, ports) in enumerate(leaves):
        use = ports
        if a.half_leaf and i == len(leaves) - 1:
            use = ports[: max(1, len(ports) // 2)]
        for p in use:
            if n >= a.hosts:
                break
            n += 1
            hn = "h%04d" % n
            hosts[hn] = (leaf, p, 4)
            switches[leaf][p] = (hn, 1, 4)

    out = sys.stdout
    out.write("# fat tree: %d levels, %d hosts, %d switches (gen_fat_tree.py)\n\n"
              % (a.levels, len(hosts), len(switches)))
    for s in switches:
        out.write('Switch\t%d "%s"\t\t# "%s"\n' % (nports[s], s, s))
        for p in sorted(switches[s]):
            r, rp, w = switches[s][p]
            desc = ("%s mlx5_0" % r) if r in hosts else r
            out.write('[%d]\t"%s"[%d]\t\t# "%s" lid 0 %dx%s\n' % (p, r, rp, desc, w, a.speed))
        out.write("\n")
    for hn, (leaf, p, w) in hosts.items():
        out.write('Hca\t1 "%s"\t\t# "%s mlx5_0"\n' % (hn, hn))
        out.write('[1]\t"%s"[%d]\t\t# lid 0 lmc 0 "%s" lid 0 %dx%s\n' % (leaf, p, leaf, w, a.speed))
        out.write("\n")


if __name__ == "__main__":
    main()
