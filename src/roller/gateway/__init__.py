"""roller.gateway: the long-running recording gateway and its session store.

Many harness runs, many principals, one proxy core (`roller.proxy`): a roller token
authenticates each request, the real upstream key is swapped in, every exchange is
recorded on the tape, and each request is charged to a `runtime_session` row derived from
its wire identity (`roller.identity`) with parent links for subagents. Agents may leave
notes for their own descendants. See docs/gateway.md.
"""
