# Simulates space_to_depth_plane_kernel's staging and reads (index math only) against the
# definition S[(co*KH+ki)*KW+kj][n][ih*W+iw] = go[n,co,ih*SH-PH+ki*DH, iw*SW-PW+kj*DW] (0 outside),
# and counts shared-memory bank conflicts of the read loop's e-th load per warp.
import numpy as np, itertools
def geom(N,Cout,H,W,K,S,P,D,OP):
    Hout=(H-1)*S[0]-2*P[0]+D[0]*(K[0]-1)+OP[0]+1; Wout=(W-1)*S[1]-2*P[1]+D[1]*(K[1]-1)+OP[1]+1
    return dict(N=N,Cout=Cout,H=H,W=W,KH=K[0],KW=K[1],SH=S[0],SW=S[1],PH=P[0],PW=P[1],DH=D[0],DW=D[1],Hout=Hout,Wout=Wout)
def run(g, elem, padded, sms=132):
    N,Cout,H,W,KH,KW=g['N'],g['Cout'],g['H'],g['W'],g['KH'],g['KW']
    Hout,Wout=g['Hout'],g['Wout']; KK=KH*KW; hw=H*W; K=N*hw
    go=np.random.rand(N,Cout,Hout,Wout)
    pitch=Wout+1 if padded else Wout; ps=Hout*pitch
    if ps*elem>16384: return None
    fit=16384//(ps*elem); spread=N*Cout//(sms*8); imgs=max(1,min(fit,spread,N)); bpc=-(-N//imgs)
    kmax=16//elem; vec=kmax
    while vec>1 and W%vec: vec//=2
    S=np.full((Cout*KK, K), np.nan); worst=0; total_wav=0; loads=0
    for b in range(Cout*bpc):
        co=b//bpc; n0=(b-co*bpc)*imgs; nimg=min(imgs,N-n0)
        sm=np.full(16384//elem, np.nan)
        for nl in range(nimg):
            for oh in range(Hout):
                for ow in range(Wout): sm[nl*ps+oh*pitch+ow]=go[n0+nl,co,oh,ow]
        vecs=nimg*hw//vec
        idx=[]
        for j in range(KK*vecs):
            t=j//vecs; kv=j-t*vecs; ki=t//KW; kj=t-ki*KW; k=kv*vec; nl=k//hw; pix=k-nl*hw; ih=pix//W; iw0=pix-ih*W
            oh=ih*g['SH']+ki*g['DH']-g['PH']; ok=0<=oh<Hout; addrs=[]
            for e in range(vec):
                ow=(iw0+e)*g['SW']+kj*g['DW']-g['PW']
                v=sm[nl*ps+oh*pitch+ow] if ok and 0<=ow<Wout else 0.0
                S[co*KK+t, n0*hw+k+e]=v
                addrs.append(nl*ps+oh*pitch+ow if ok and 0<=ow<Wout else None)
            idx.append(addrs)
        if b==0:  # bank conflicts of the first block's warps: per load e, distinct 4-byte words per bank
            for w0 in range(0,len(idx),32):
                for e in range(vec):
                    words=set(a*elem//4 for a in (x[e] for x in idx[w0:w0+32]) if a is not None)
                    per_bank={}
                    for wd in words: per_bank.setdefault(wd%32,set()).add(wd)
                    worst=max(worst, max((len(v) for v in per_bank.values()), default=0))
                    total_wav+=max((len(v) for v in per_bank.values()), default=0); loads+=1
    ref=np.zeros_like(S)
    for co,ki,kj,n,ih,iw in itertools.product(range(Cout),range(KH),range(KW),range(N),range(H),range(W)):
        oh=ih*g['SH']-g['PH']+ki*g['DH']; ow=iw*g['SW']-g['PW']+kj*g['DW']
        ref[(co*KH+ki)*KW+kj, n*hw+ih*W+iw]=go[n,co,oh,ow] if 0<=oh<Hout and 0<=ow<Wout else 0
    assert not np.isnan(S).any(), "unwritten"
    return np.array_equal(S,ref), worst, total_wav/loads
np.random.seed(0)
cases=[("dcgan_g4-like",geom(8,4,16,16,(4,4),(2,2),(1,1),(1,1),(0,0))),
       ("dcgan_g2-like",geom(16,4,4,4,(4,4),(2,2),(1,1),(1,1),(0,0))),
       ("k3s2op1",geom(3,3,5,7,(3,3),(2,2),(1,1),(1,1),(1,1))),
       ("dil2",geom(2,3,6,5,(3,3),(1,1),(1,1),(2,2),(0,0))),
       ("k53s32",geom(2,3,5,7,(5,3),(3,2),(2,1),(1,1),(0,1)))]
for name,g in cases:
    for elem in (2,4):
        for padded in (False,True):
            r=run(g,elem,padded,sms=1)
            print(name,elem,"padded" if padded else "dense ",r)
