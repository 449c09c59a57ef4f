// Each thread scans its own row: negative entries are skipped (continue),
// a zero ends the row early (break), and it records the sum and how many
// entries it added.
__global__ void loop_break_continue(const int *m, int *sum, int *count, int cols)
{
    int row = threadIdx.x;
    const int *p = m + row * cols;
    int s = 0, c = 0;
#pragma unroll 1
    for (int j = 0; j < cols; j++) {
        int v = p[j];
        if (v < 0)
            continue;
        if (v == 0)
            break;
        s += v;
        c++;
    }
    sum[row] = s;
    count[row] = c;
}
