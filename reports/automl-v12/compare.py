import json, sys
import numpy as np
from scipy.stats import wilcoxon
rows=[json.loads(l) for l in open(sys.argv[1])]
by={}
for r in rows: by.setdefault((r['dataset'],r['seed']),{})[r['tool']]=r
pairs=[(v['metabo'],v['metabo-baseline']) for v in by.values() if 'metabo' in v and 'metabo-baseline' in v and v['metabo']['test_error'] is not None and v['metabo-baseline']['test_error'] is not None]
a=np.array([n['test_error'] for n,_ in pairs]); b=np.array([o['test_error'] for _,o in pairs])
ab=np.array([n['balanced_error'] for n,_ in pairs]); bb=np.array([o['balanced_error'] for _,o in pairs])
print(f"{len(pairs)} cells: test error new {a.mean():.4f} before {b.mean():.4f}; balanced {ab.mean():.4f} {bb.mean():.4f}; w/t/l {(a<b).sum()}/{(a==b).sum()}/{(a>b).sum()}" + (f", Wilcoxon p {wilcoxon(a,b).pvalue:.3f}" if (a!=b).sum()>5 else ""))
for name,idx in (("new",0),("before",1)):
    rs=[p[idx] for p in pairs]
    s=np.array([r['seconds'] for r in rs]); m=np.array([r['members'] or 0 for r in rs]); t=[r['trials'] for r in rs if r['trials']]
    f=[r['first_model'] for r in rs if r['first_model']]
    print(f"{name:7s}: seconds median {np.median(s):.1f} max {s.max():.1f}; >5% over: {(s>31.5).sum()}; >2%: {(s>30.6).sum()}; <27 s: {(s<27).sum()}; ensembles {(m>1).sum()} (median {np.median(m[m>1]) if (m>1).any() else 0:.0f} members); median trials {np.median(t):.0f}; first model median {np.median(f):.1f}; predict median {np.median([r['predict_seconds'] for r in rs if r['predict_seconds']]):.2f}")
if len(sys.argv)>2:
    for n,o in pairs:
        print(f"{n['dataset']:42s} {n['seed']} new {n['seconds']:5.1f}s m{n['members']} t{n['trials']} {n['test_error']:.3f} | before {o['seconds']:5.1f}s m{o['members']} t{o['trials']} {o['test_error']:.3f}")
