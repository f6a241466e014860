"""RFacts as a short human-readable page (`rcompat r facts`)."""
from __future__ import annotations

from rcompat.r.facts import RFacts


def facts_text(facts: RFacts) -> str:
    if not facts.install:
        return f"R: not installed ({facts.reason}). Install r-base-core.\n"
    lines = []
    if not facts.available:
        lines.append(f"R at {facts.install.get('rscript')}: no facts ({facts.reason})")
        for err in facts.errors:
            lines.append(f"  {err.get('what')}: {err.get('output_tail', '')}")
        return "\n".join(lines) + "\n"
    v = facts.version
    lines.append(f"R          {v.get('string')}  (svn rev {v.get('svn_rev')}, {facts.platform})")
    lines.append(f"R_HOME     {facts.r_home}   [found by {facts.install.get('found_by')}; "
                 f"facts via {facts.engine}]")
    rpy2 = facts.rpy2
    if rpy2.get("used"):
        state = "ok" if rpy2.get("ok") else f"FAILED: {(rpy2.get('error') or {}).get('message', '')[:200]}"
        lines.append(f"rpy2       {rpy2.get('version')} {state}")
    else:
        lines.append(f"rpy2       not used ({rpy2.get('reason')})")
    lines.append("libPaths   " + "\n           ".join(facts.lib_paths))
    lines.append("packages")
    for name, pkg in facts.packages.items():
        if pkg.status == "installed":
            lines.append(f"  {name:<11} {pkg.version:<12} {pkg.path}")
        elif pkg.status == "error":
            lines.append(f"  {name:<11} {'ERROR':<12} {pkg.path}: {pkg.error}")
        else:
            lines.append(f"  {name:<11} -")
    cc = facts.compiler
    c17 = {True: "accepts", False: "REJECTS", None: "unknown:"}[cc.get("accepts_c17")]
    lines.append(f"compiler   CC={cc.get('cc')}  {c17} {cc.get('flag')}")
    lines.append(f"           CFLAGS={cc.get('cflags')}")
    tr = facts.torch_runtime
    if tr.get("searched"):
        found = ", ".join(f"{p['dir']} ({len(p.get('libraries', []))} libs)" for p in tr.get("places", []))
        lines.append(f"torch libs lantern={'yes' if tr.get('lantern') else 'no'} "
                     f"libtorch={'yes' if tr.get('libtorch') else 'no'}  {found or 'no lib/ or deps/ dir'}")
    if tr.get("env"):
        lines.append("torch env  " + " ".join(f"{k}={v}" for k, v in tr["env"].items()))
    ret = facts.reticulate
    if ret.get("python"):
        pk = facts.python.get("python_packages") or {}
        lines.append(f"reticulate {ret.get('python')} (Python {ret.get('version')}, "
                     f"by {ret.get('forced') or 'discovery order'})")
        lines.append("           " + (", ".join(f"{k} {v}" for k, v in sorted(pk.items())) or
                                      "no tensorflow/keras/torch"))
    else:
        lines.append(f"reticulate python not determined ({ret.get('note') or ret.get('discover_error') or ret.get('method')})")
    from rcompat.renderers.text import wrap_page

    return wrap_page("\n".join(lines)) + "\n"
