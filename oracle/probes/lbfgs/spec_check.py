# SEMANTICS §16.3 and §16.6 (strong_wolfe) transcribed in plain double arithmetic, checked against LibTorch's
# torch::optim::LBFGS through the black-box probe closure_calls.cc: for every configuration, the same number of closure
# calls, and the largest relative difference of the parameters and losses at those calls (absolute below 1e-6).
# Usage: python3 spec_check.py ./closure_calls [none,strong_wolfe]
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
            if s.ls=='strong_wolfe':  # SEM-16.6: trial points x0 + t_k d, then the move to the one chosen
                x0=list(x)
                def phi(tk):
                    x[:]=[a+tk*b for a,b in zip(x0,d)]
                    r=closure(x); x[:]=x0; return r
                loss,g,t,ls_evals=strong_wolfe(phi,t,d,loss,g,gtd)  # tolerance_change is not passed (SEM-16.6)
                x[:]=[a+t*b for a,b in zip(x0,d)]
                opt_cond = max(abs(v) for v in g) <= s.tg
            else:
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
def cubic_min(x1,f1,g1,x2,f2,g2,bounds=None):
    """SEM-16.6: the minimiser of the cubic through (x1, f1) and (x2, f2) with slopes g1, g2, clamped to bounds
    (default: between x1 and x2); where the cubic has no minimum there, the bounds' midpoint."""
    lo,hi = bounds if bounds is not None else (min(x1,x2),max(x1,x2))
    d1=g1+g2-3*(f1-f2)/(x1-x2)
    d2sq=d1*d1-g1*g2
    if d2sq>=0:
        d2=math.sqrt(d2sq)
        if x1<=x2: m=x2-(x2-x1)*((g2+d2-d1)/(g2-g1+2*d2))
        else: m=x1-(x1-x2)*((g1+d2-d1)/(g1-g2+2*d2))
        return min(max(m,lo),hi)
    return (lo+hi)/2
PYTHON_ORDER = False  # SEM-16.6: where the zoom tests its bracket's width (SEM-11.17)
def strong_wolfe(phi,t,d,f,g,gtd,tolerance_change=1e-9,c1=1e-4,c2=0.9,max_ls=25):
    """SEM-16.6: a bracketing phase, then a zoom; returns (loss, g, t, evaluations) at the point chosen."""
    d_norm=max(abs(v) for v in d)
    f_new,g_new=phi(t); evals=1; gtd_new=dot(g_new,d)
    t_prev,f_prev,g_prev,gtd_prev=0.0,f,g,gtd
    done=False; it=0
    while it<max_ls:
        if f_new>f+c1*t*gtd or (it>1 and f_new>=f_prev):
            br=[t_prev,t]; bf=[f_prev,f_new]; bg=[g_prev,g_new]; bd=[gtd_prev,gtd_new]; break
        if abs(gtd_new)<=-c2*gtd:
            br=[t]; bf=[f_new]; bg=[g_new]; done=True; break
        if gtd_new>=0:
            br=[t_prev,t]; bf=[f_prev,f_new]; bg=[g_prev,g_new]; bd=[gtd_prev,gtd_new]; break
        lo=t+0.01*(t-t_prev); hi=t*10
        tmp=t
        t=cubic_min(t_prev,f_prev,gtd_prev,t,f_new,gtd_new,(lo,hi))
        t_prev,f_prev,g_prev,gtd_prev=tmp,f_new,g_new,gtd_new
        f_new,g_new=phi(t); evals+=1; gtd_new=dot(g_new,d); it+=1
    if it==max_ls:
        br=[0,t]; bf=[f,f_new]; bg=[g,g_new]; bd=[gtd,gtd_new]
    insuf=False
    low,high=(0,1) if bf[0]<=bf[-1] else (1,0)
    while not done and it<max_ls:
        # the C++ API tests the bracket's width after each trial (below); Python before it, here
        if PYTHON_ORDER and abs(br[1]-br[0])*d_norm<tolerance_change: break
        t=cubic_min(br[0],bf[0],bd[0],br[1],bf[1],bd[1])
        eps=0.1*(max(br)-min(br))
        if min(max(br)-t,t-min(br))<eps:
            if insuf or t>=max(br) or t<=min(br):
                t = max(br)-eps if abs(t-max(br))<abs(t-min(br)) else min(br)+eps
                insuf=False
            else: insuf=True
        else: insuf=False
        f_new,g_new=phi(t); evals+=1; gtd_new=dot(g_new,d); it+=1
        if f_new>f+c1*t*gtd or f_new>=bf[low]:
            br[high]=t; bf[high]=f_new; bg[high]=g_new; bd[high]=gtd_new
            low,high=(0,1) if bf[0]<=bf[1] else (1,0)
        else:
            if abs(gtd_new)<=-c2*gtd: done=True
            elif gtd_new*(br[high]-br[low])>=0:
                br[high]=br[low]; bf[high]=bf[low]; bg[high]=bg[low]; bd[high]=bd[low]
            br[low]=t; bf[low]=f_new; bg[low]=g_new; bd[low]=gtd_new
        if not PYTHON_ORDER and abs(br[1]-br[0])*d_norm<tolerance_change: break
    t=br[low] if len(br)>1 else br[0]; f_new=bf[low] if len(bf)>1 else bf[0]; g_new=bg[low] if len(bg)>1 else bg[0]
    return f_new,g_new,t,evals
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
far=0  # configurations with the same calls whose values part by more than 1e-6 (rounding amplified, SEM-16.4)
configs=0
line_searches=sys.argv[2].split(",") if len(sys.argv)>2 else ["none","strong_wolfe"]
for ls in line_searches:
 for problem in (0,1,2):
  for max_iter in (1,2,5,20,40):
    for lr in (1,0.5,0.1,2):
      for hist in (1,2,100):
        steps=3
        configs+=1
        out=subprocess.run([probe,ls,str(problem),str(max_iter),str(lr),str(hist),"f64",str(steps)],capture_output=True,text=True).stdout
        tc=[]
        for line in out.splitlines():
            if line.startswith("call"):
                xs=line.split("x=")[1].split(" loss=")
                tc.append(([float(a) for a in xs[0].split(",")], float(xs[1])))
        calls=[]
        o=LBFGS(lr=lr,max_iter=max_iter,history_size=hist,ls=None if ls=="none" else ls); x=[1.5,-0.5,2.0,0.25,3.0]
        for k in range(steps): o.step(x,f(problem))
        if len(calls)!=len(tc):
            mismatches+=1; print("closure calls differ: %s problem %d max_iter %d lr %g history_size %d: %d here, %d LibTorch" % (ls,problem,max_iter,lr,hist,len(calls),len(tc))); continue
        config_worst=0
        for (xa,la),(xb,lb) in zip(calls,tc):
            for a,b in zip(xa+[la],xb+[lb]):
                r=abs(a-b)/max(abs(b),1e-6)  # absolute below 1e-6: at a minimum, values of 1e-35 part freely
                config_worst=max(config_worst,r)
        worst=max(worst,config_worst)
        if config_worst>1e-6:
            far+=1; print("same calls, values apart by %.3g (relative): %s problem %d max_iter %d lr %g history_size %d" % (config_worst,ls,problem,max_iter,lr,hist))
print("%d configurations (%s), %d with a different number of closure calls, %d with the same calls apart by more than 1e-6; largest relative difference %.3g" % (configs, ", ".join(line_searches), mismatches, far, worst))
sys.exit(1 if mismatches else 0)
