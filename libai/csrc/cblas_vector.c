/*
 * cblas_sgemm for OneFlow's CPU kernels, sending matrix-vector products to GEMV.
 *
 * Why: OneFlow 0.9 computes every float32 matrix product on the CPU with one `cblas_sgemm` call
 * into the OpenBLAS it bundles, which has no path for a product with one row or one column.
 * Such a product (a decoding step at batch size 1, a per-head attention score of one query)
 * then packs the whole weight the way a large product would, 5-10x slower than a GEMV.
 * liboneflow calls `cblas_sgemm` through its procedure linkage table, so a definition loaded
 * into the global symbol scope before OneFlow takes its place. libai loads this one there
 * (see libai/_blas.py, route_matrix_products) and hands it a current, maintained OpenBLAS
 * (the scipy-openblas32 package's, 32-bit integers): products with one row or one column go to
 * its `sgemv`, all others to its `sgemm`. Nothing else changes: same layouts, same arithmetic
 * up to rounding order. Until `libai_cblas_route` has been called this sgemm refuses to run
 * (it prints why and aborts), which cannot happen through libai: it loads this library only
 * after the routes are known to exist.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { ROW_MAJOR = 101, COL_MAJOR = 102, NO_TRANS = 111 };

typedef void (*sgemm_fn)(int, int, int, int, int, int, float, const float *, int,
                         const float *, int, float, float *, int);
typedef void (*sgemv_fn)(int, int, int, int, float, const float *, int, const float *, int,
                         float, float *, int);

static sgemm_fn route_gemm;
static sgemv_fn route_gemv;
static long long gemv_calls; /* for tests and the benchmark: how many products took the GEMV path */

/* Set the target BLAS: its cblas_sgemm and cblas_sgemv. */
int libai_cblas_route(void *gemm, void *gemv) {
  if (gemm == NULL || gemv == NULL) return 1;
  route_gemm = (sgemm_fn)gemm;
  route_gemv = (sgemv_fn)gemv;
  return 0;
}

long long libai_cblas_gemv_calls(void) { return gemv_calls; }

/* BLAS reads y when beta is 0 only to multiply it by 0: a NaN left in uninitialised output
   memory would survive, so clear it first, as GEMM's contract promises. */
static void clear(float *y, int64_t n, int64_t inc) {
  for (int64_t i = 0; i < n; ++i) y[i * inc] = 0.0f;
}

void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc) {
  if (route_gemm == NULL) {
    fputs("libai cblas_sgemm: called before libai_cblas_route set a BLAS to use\n", stderr);
    abort();
  }
  if (order == COL_MAJOR) { /* C = op(A) op(B) column-major is C^T = op(B)^T op(A)^T row-major */
    int t = m; m = n; n = t;
    const float *p = a; a = b; b = p;
    t = lda; lda = ldb; ldb = t;
    t = trans_a; trans_a = trans_b; trans_b = t;
  }
  int transposed = NO_TRANS + 1; /* CblasTrans */
  if (k > 0 && m == 1 && n > 0) { /* y[n] = x[k] op(B): x is A's only row (or column) */
    int incx = trans_a == NO_TRANS ? 1 : lda;
    if (beta == 0.0f) clear(c, n, 1);
    if (trans_b == NO_TRANS)
      route_gemv(ROW_MAJOR, transposed, k, n, alpha, b, ldb, a, incx, beta, c, 1);
    else
      route_gemv(ROW_MAJOR, NO_TRANS, n, k, alpha, b, ldb, a, incx, beta, c, 1);
    __atomic_add_fetch(&gemv_calls, 1, __ATOMIC_RELAXED);
    return;
  }
  if (k > 0 && n == 1 && m > 0) { /* y[m] = op(A) x[k]: x is B's only column (or row) */
    int incx = trans_b == NO_TRANS ? ldb : 1;
    if (beta == 0.0f) clear(c, m, ldc);
    if (trans_a == NO_TRANS)
      route_gemv(ROW_MAJOR, NO_TRANS, m, k, alpha, a, lda, b, incx, beta, c, ldc);
    else
      route_gemv(ROW_MAJOR, transposed, k, m, alpha, a, lda, b, incx, beta, c, ldc);
    __atomic_add_fetch(&gemv_calls, 1, __ATOMIC_RELAXED);
    return;
  }
  route_gemm(ROW_MAJOR, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
