/* An evaluator that does (almost) nothing: it reads the program and prints a
 * score derived from its bytes, so the controller's own cost can be measured. */
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc < 2) return 2;
    FILE *f = fopen(argv[1], "rb");
    if (!f) return 2;
    unsigned long h = 5381;
    int ch;
    while ((ch = fgetc(f)) != EOF)
        h = h * 33 + (unsigned long)ch;
    fclose(f);
    printf("{\"metrics\": {\"combined_score\": %.6f, \"x\": %lu}}\n", (double)(h % 10007) / 10007.0,
           h % 97);
    return 0;
}
