"""Control-flow graph helpers: immediate post-dominators.

Cooper, Harvey and Kennedy's iterative dominator algorithm ("A Simple, Fast
Dominance Algorithm") run on the reverse CFG, rooted at a virtual exit node
that every exiting block (no successors) flows into.
"""
from __future__ import annotations


def immediate_post_dominators(succs: list[list[int]]) -> list[int]:
    """succs[i]: successor blocks of block i. Returns ipdom[i]: the block
    where all paths from i meet first, or -1 when that is the virtual exit
    (or when i cannot reach an exit at all, e.g. an infinite loop)."""
    n = len(succs)
    exit_node = n
    preds_rev = [list(s) if s else [exit_node] for s in succs]   # forward successors = reverse-graph preds
    rev_succ: list[list[int]] = [[] for _ in range(n + 1)]        # reverse graph: exit -> exiting blocks ...
    for i, ss in enumerate(preds_rev):
        for s in ss:
            rev_succ[s].append(i)
    # postorder of the reverse graph from the exit (iterative DFS)
    order, seen = [], {exit_node}
    stack = [(exit_node, iter(rev_succ[exit_node]))]
    while stack:
        node, it = stack[-1]
        nxt = next((x for x in it if x not in seen), None)
        if nxt is None:
            order.append(node)
            stack.pop()
        else:
            seen.add(nxt)
            stack.append((nxt, iter(rev_succ[nxt])))
    post = {v: k for k, v in enumerate(order)}
    idom = {exit_node: exit_node}

    def intersect(a, b):
        while a != b:
            while post[a] < post[b]:
                a = idom[a]
            while post[b] < post[a]:
                b = idom[b]
        return a

    changed = True
    while changed:
        changed = False
        for v in reversed(order):
            if v == exit_node:
                continue
            new = None
            for p in preds_rev[v]:
                if p in idom:
                    new = p if new is None else intersect(p, new)
            if new is not None and idom.get(v) != new:
                idom[v] = new
                changed = True
    return [idom[i] if i in idom and idom[i] != exit_node else -1 for i in range(n)]
