/* interp_gpu.c - interpreter entries for the GPU-level ops of ops.def.
 *
 * The interpreter runs block IR; GPU IR (gpu.h) is run by the GPU.  Every
 * op still needs an entry in the dispatch table: convert_layout only changes
 * which thread holds an element, so it copies; the shared-memory and async
 * ops stop the launch with an internal error. */
#include "interp_impl.h"

NrIStatus nr_iexec_CONVERT_LAYOUT(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    (void)in;
    NrIVal *r = nr_ires(fr, op, 0), *a = nr_iopnd(fr, op, 0);
    memcpy(r->p, a->p, (size_t)(a->n * a->esize));
    return NR_IST_OK;
}

static NrIStatus gpu_only(NrInterp *in, const NrOp *op) {
    return nr_ifail(in, op, "internal error: GPU op %s in interpreter", nr_op_info[op->opc].name);
}

NrIStatus nr_iexec_LOCAL_ALLOC(NrInterp *in, NrIFrame *fr, const NrOp *op) { (void)fr; return gpu_only(in, op); }
NrIStatus nr_iexec_LOCAL_LOAD(NrInterp *in, NrIFrame *fr, const NrOp *op) { (void)fr; return gpu_only(in, op); }
NrIStatus nr_iexec_LOCAL_STORE(NrInterp *in, NrIFrame *fr, const NrOp *op) { (void)fr; return gpu_only(in, op); }
NrIStatus nr_iexec_MEMDESC_INDEX(NrInterp *in, NrIFrame *fr, const NrOp *op) { (void)fr; return gpu_only(in, op); }
NrIStatus nr_iexec_MEMDESC_TRANS(NrInterp *in, NrIFrame *fr, const NrOp *op) { (void)fr; return gpu_only(in, op); }
NrIStatus nr_iexec_ASYNC_COPY(NrInterp *in, NrIFrame *fr, const NrOp *op) { (void)fr; return gpu_only(in, op); }
NrIStatus nr_iexec_ASYNC_COMMIT_GROUP(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    (void)fr;
    return gpu_only(in, op);
}
NrIStatus nr_iexec_ASYNC_WAIT(NrInterp *in, NrIFrame *fr, const NrOp *op) { (void)fr; return gpu_only(in, op); }
NrIStatus nr_iexec_WARP_GROUP_DOT(NrInterp *in, NrIFrame *fr, const NrOp *op) { (void)fr; return gpu_only(in, op); }
NrIStatus nr_iexec_WARP_GROUP_DOT_WAIT(NrInterp *in, NrIFrame *fr, const NrOp *op) {
    (void)fr;
    return gpu_only(in, op);
}
NrIStatus nr_iexec_MBARRIER_INIT(NrInterp *in, NrIFrame *fr, const NrOp *op) { (void)fr; return gpu_only(in, op); }
NrIStatus nr_iexec_MBARRIER_EXPECT(NrInterp *in, NrIFrame *fr, const NrOp *op) { (void)fr; return gpu_only(in, op); }
NrIStatus nr_iexec_MBARRIER_INVAL(NrInterp *in, NrIFrame *fr, const NrOp *op) { (void)fr; return gpu_only(in, op); }
NrIStatus nr_iexec_MBARRIER_WAIT(NrInterp *in, NrIFrame *fr, const NrOp *op) { (void)fr; return gpu_only(in, op); }
NrIStatus nr_iexec_MBARRIER_ARRIVE(NrInterp *in, NrIFrame *fr, const NrOp *op) { (void)fr; return gpu_only(in, op); }
NrIStatus nr_iexec_WARP_SPECIALIZE(NrInterp *in, NrIFrame *fr, const NrOp *op) { (void)fr; return gpu_only(in, op); }
NrIStatus nr_iexec_TMA_LOAD(NrInterp *in, NrIFrame *fr, const NrOp *op) { (void)fr; return gpu_only(in, op); }
NrIStatus nr_iexec_TMA_STORE(NrInterp *in, NrIFrame *fr, const NrOp *op) { (void)fr; return gpu_only(in, op); }
NrIStatus nr_iexec_WARPGROUP_ID(NrInterp *in, NrIFrame *fr, const NrOp *op) { (void)fr; return gpu_only(in, op); }
NrIStatus nr_iexec_TENSORMAP(NrInterp *in, NrIFrame *fr, const NrOp *op) { (void)fr; return gpu_only(in, op); }
