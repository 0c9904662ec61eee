/* The real nodes' sandbox ("pause") container: holds the pod's namespaces, reaps orphans, and
 * exits at once on SIGTERM or SIGINT. Built statically by the lab (`gcc -static`), so the image
 * holds this one file. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) {
  (void)sig;
  _exit(0);
}

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, 0, WNOHANG) > 0) {
  }
}

int main(void) {
  signal(SIGINT, stop);
  signal(SIGTERM, stop);
  signal(SIGCHLD, reap);
  for (;;) {
    pause();
  }
}
