# SEMANTICS §16.3 transcribed in plain double arithmetic, checked against LibTorch's torch::optim::LBFGS through the
# black-box probe closure_calls.cc: for every configuration, the same number of closure calls, and the largest
# relative difference of the parameters and losses at those calls. Usage: python3 spec_check.py ./closure_calls
import math, sys
def dot(a, b): return sum(x * y for x, y in zip(a, b))  # in order; LibTorch's order is unspecified (SEM-16.4)
class LBFGS:
    def __init__(s, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7, tolerance_change=1e-9, history_size=100, ls=None):
        s.lr=lr; s.max_iter=max_iter; s.max_eval=max_eval if max_eval is not None else max_iter*5//4
        s.tg=tolerance_grad; s.tc=tolerance_change; s.hist=history_size; s.ls=ls
        s.st=dict(func_evals=0,n_iter=0)
    def step(s, x, closure):
        st=s.st
        orig_loss, g = closure(x)
        loss=orig_loss; evals=1; st['func_evals']+=1
        if max(abs(v) for v in g) <= s.tg: return orig_loss
        d=st.get('d'); t=st.get('t'); old_dirs=st.get('old_dirs'); old_stps=st.get('old_stps'); ro=st.get('ro'); H=st.get('H_diag')
        prev_g=st.get('prev_flat_grad'); prev_loss=st.get('prev_loss')
        n_iter=0
        while n_iter < s.max_iter:
            n_iter+=1; st['n_iter']+=1
            if st['n_iter']==1:
                d=[-v for v in g]; old_dirs=[]; old_stps=[]; ro=[]; H=1.0
            else:
                y=[a-b for a,b in zip(g,prev_g)]; sv=[a*t for a in d]; ys=dot(y,sv)
                if ys>1e-10:
                    if len(old_dirs)==s.hist: old_dirs.pop(0); old_stps.pop(0); ro.pop(0)
                    old_dirs.append(y); old_stps.append(sv); ro.append(1./ys); H=ys/dot(y,y)
                n=len(old_dirs); al=[0]*n
                q=[-v for v in g]
                for i in range(n-1,-1,-1):
                    al[i]=dot(old_stps[i],q)*ro[i]; q=[a-al[i]*b for a,b in zip(q,old_dirs[i])]
                r=[a*H for a in q]
                for i in range(n):
                    be=dot(old_dirs[i],r)*ro[i]; r=[a+(al[i]-be)*b for a,b in zip(r,old_stps[i])]
                d=r
            prev_g=list(g); prev_loss=loss
            if st['n_iter']==1: t=min(1., 1./sum(abs(v) for v in g))*s.lr
            else: t=s.lr
            gtd=dot(g,d)
            if gtd > -s.tc: break
            ls_evals=0
            x[:]=[a+t*b for a,b in zip(x,d)]
            if n_iter != s.max_iter:
                loss,g=closure(x); ls_evals=1
                opt_cond = max(abs(v) for v in g) <= s.tg
            evals+=ls_evals; st['func_evals']+=ls_evals
            if n_iter==s.max_iter: break
            if evals>=s.max_eval: break
            if opt_cond: break
            if max(abs(a*t) for a in d) <= s.tc: break
            if abs(loss-prev_loss) < s.tc: break
        st.update(d=d,t=t,old_dirs=old_dirs,old_stps=old_stps,ro=ro,H_diag=H,prev_flat_grad=prev_g,prev_loss=prev_loss)
        return orig_loss
import subprocess
def f(problem):
    def fn(x):
        w=x[:3]; v=x[3:]
        if problem==0:
            loss=sum(a*a*a*a for a in w)+sum(a*a for a in v)*3+sum(w)*sum(v)
            g=[4*a*a*a+sum(v) for a in w]+[6*a+sum(w) for a in v]
        elif problem==1:
            loss=sum(math.exp(a) for a in w)+sum((a-1)**2 for a in v)*10+sum(a*a for a in w)
            g=[math.exp(a)+2*a for a in w]+[20*(a-1) for a in v]
        else:
            loss=sum(a*a for a in w)*0.5+sum(a*a for a in v)*2
            g=list(w)+[4*a for a in v]
        calls.append((list(x),loss))
        return loss,g
    return fn
probe = sys.argv[1] if len(sys.argv) > 1 else './closure_calls'
worst=0
mismatches=0
for problem in (0,1,2):
  for max_iter in (1,2,5,20,40):
    for lr in (1,0.5,0.1,2):
      for hist in (1,2,100):
        steps=3
        out=subprocess.run([probe,"none",str(problem),str(max_iter),str(lr),str(hist),"f64",str(steps)],capture_output=True,text=True).stdout
        tc=[]
        for line in out.splitlines():
            if line.startswith("call"):
                xs=line.split("x=")[1].split(" loss=")
                tc.append(([float(a) for a in xs[0].split(",")], float(xs[1])))
        calls=[]
        o=LBFGS(lr=lr,max_iter=max_iter,history_size=hist); x=[1.5,-0.5,2.0,0.25,3.0]
        for k in range(steps): o.step(x,f(problem))
        if len(calls)!=len(tc):
            mismatches+=1; print("closure calls differ: problem %d max_iter %d lr %g history_size %d: %d here, %d LibTorch" % (problem,max_iter,lr,hist,len(calls),len(tc))); continue
        for (xa,la),(xb,lb) in zip(calls,tc):
            for a,b in zip(xa+[la],xb+[lb]):
                r=abs(a-b)/max(abs(b),1e-300)
                worst=max(worst,r)
print("180 configurations, %d with a different number of closure calls; largest relative difference %.3g" % (mismatches, worst))
sys.exit(1 if mismatches else 0)
