// One step of an n-body simulation (8 bodies in the plane, a thread each): the
// acceleration from every other body with softening, r2 = dx*dx + dy*dy + eps,
// inv = 1 / sqrtf(r2) (sqrt.rn, rcp.rn), s = m * (inv*inv*inv), then v += a*dt and
// p += v*dt; out[4i..4i+3] = x, y, vx, vy. Every op rounded, none fused.
__global__ void nbody(const float *px, const float *py, const float *vx, const float *vy, const float *mass,
                      float *out, int n, float dt, float eps)
{
    int i = threadIdx.x;
    float xi = px[i], yi = py[i];
    float ax = 0.0f, ay = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (j == i)
            continue;
        float dx = px[j] - xi, dy = py[j] - yi;
        float r2 = dx * dx + dy * dy + eps;
        float inv = 1.0f / sqrtf(r2);
        float s = mass[j] * (inv * inv * inv);
        ax += dx * s;
        ay += dy * s;
    }
    float nvx = vx[i] + ax * dt, nvy = vy[i] + ay * dt;
    out[4 * i] = xi + nvx * dt;
    out[4 * i + 1] = yi + nvy * dt;
    out[4 * i + 2] = nvx;
    out[4 * i + 3] = nvy;
}
