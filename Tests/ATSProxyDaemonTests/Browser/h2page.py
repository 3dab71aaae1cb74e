"""Loads one page with many subresources in Debian's chromium, headless, through a running atsproxy
in intercept mode (its CA trusted in a scratch HOME's NSS database, as a phone trusts it), for
HTTP2ProcessTests.swift. Prints one JSON object: how many images loaded, and the protocol chromium
used for the page and for each subresource (the Resource Timing API's nextHopProtocol).

Usage: h2page.py --proxy PORT --ca CA.pem --url URL
"""
import argparse, json, os, subprocess, tempfile

from selenium import webdriver
from selenium.webdriver.chrome.service import Service


def home_trusting(ca):
    home = tempfile.mkdtemp(prefix="atsproxy-chromium-h2-")
    database = "sql:" + os.path.join(home, ".pki", "nssdb")
    os.makedirs(database[4:])
    subprocess.run(["certutil", "-d", database, "-N", "--empty-password"], check=True)
    subprocess.run(["certutil", "-d", database, "-A", "-n", "atsproxy CA", "-t", "C,,", "-i", ca], check=True)
    return home


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--proxy", type=int, required=True)
    parser.add_argument("--ca", required=True)
    parser.add_argument("--url", required=True)
    arguments = parser.parse_args()
    home = home_trusting(arguments.ca)
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     f"--proxy-server=http://127.0.0.1:{arguments.proxy}", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--no-first-run"]:
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver", env=dict(os.environ, HOME=home)),
                              options=options)
    try:
        driver.set_page_load_timeout(60)
        driver.get(arguments.url)  # Returns once the load event fired: every image is in.
        seen = driver.execute_script("""
            return {
                page: performance.getEntriesByType('navigation')[0].nextHopProtocol,
                loaded: Array.from(document.images).filter(function (i) { return i.complete && i.naturalWidth > 0; }).length,
                images: document.images.length,
                protocols: performance.getEntriesByType('resource').map(function (e) { return e.nextHopProtocol; })
            };""")
    finally:
        driver.quit()
    print(json.dumps(seen), flush=True)


main()
