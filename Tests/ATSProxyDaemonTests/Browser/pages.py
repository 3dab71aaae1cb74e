"""Drives Debian's chromium, headless, through Selenium against a running atsproxy, for the web
tests in WebBrowserProcessTests.swift. Prints one JSON object of what the browser saw; the Swift
test asserts on it. Screenshots at a phone's width go to --out.

Usage: pages.py --proxy PORT --web PORT --out DIR
Between loading the live view and watching for the blocked host, it prints "READY" and waits for
a line on standard input: the test makes the blocked connection then, and the time from that line
to the host's row appearing is measured in the browser's own process.
"""
import argparse, json, os, subprocess, sys, tempfile, time

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

PHONE = (390, 844)


def home_trusting(ca):
    """A HOME whose NSS database (where chromium on Linux keeps user-trusted roots) trusts `ca`
    for websites, as the phone does once its trust switch is on; with ca None, trusts nothing extra."""
    home = tempfile.mkdtemp(prefix="atsproxy-chromium-")
    database = "sql:" + os.path.join(home, ".pki", "nssdb")
    os.makedirs(database[4:])
    subprocess.run(["certutil", "-d", database, "-N", "--empty-password"], check=True)
    if ca:
        subprocess.run(["certutil", "-d", database, "-A", "-n", "atsproxy CA", "-t", "C,,", "-i", ca], check=True)
    return home


def browser(proxy_port, home):
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     f"--window-size={PHONE[0]},{PHONE[1]}", f"--proxy-server=http://127.0.0.1:{proxy_port}",
                     # atsproxy.test goes through the proxy; loopback (the listener itself) straight, as
                     # chromium always sends it. Certificates are checked for real: the CA is trusted
                     # only in the HOME given.
                     # chromium's own background loads would go through the proxy too.
                     "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"]:
        options.add_argument(argument)
    service = Service("/usr/bin/chromedriver", env=dict(os.environ, HOME=home))
    return webdriver.Chrome(service=service, options=options)


def rows_text(driver):
    # Read in one script: the live view replaces its rows on every update.
    return driver.execute_script("return Array.from(document.querySelectorAll('#hosts tr')).map(function (r) { return r.innerText; })")


def page(driver, url, out, name):
    driver.get(url)
    driver.save_screenshot(f"{out}/{name}.png")
    return {"title": driver.title, "text": driver.find_element(By.TAG_NAME, "body").text, "url": driver.current_url}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--proxy", type=int, required=True)
    parser.add_argument("--web", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--ca", required=True)
    args = parser.parse_args()
    seen = {}
    # Without the CA trusted, https://atsproxy.test/check must not load.
    untrusting = browser(args.proxy, home_trusting(None))
    try:
        seen["check_untrusted"] = page(untrusting, "https://atsproxy.test/check", args.out, "check-untrusted")
    except WebDriverException as error:
        seen["check_untrusted"] = {"error": str(error).split("\n")[0]}
    finally:
        untrusting.quit()
    driver = browser(args.proxy, home_trusting(args.ca))
    try:
        seen["through_proxy"] = page(driver, "http://atsproxy.test/", args.out, "onboarding-through-proxy")
        seen["direct"] = page(driver, f"http://127.0.0.1:{args.proxy}/", args.out, "onboarding-direct")
        seen["check"] = page(driver, "https://atsproxy.test/check", args.out, "check")
        # The PAC file as the browser fetched it, run by the browser's own JavaScript engine.
        # (chromium downloads a PAC file it is sent to, so a page of the same origin fetches it.)
        driver.get(f"http://127.0.0.1:{args.proxy}/")
        script = driver.execute_async_script(
            "var done = arguments[arguments.length - 1];"
            "fetch(arguments[0]).then(function (r) { return r.text(); }).then(done, function (e) { done('' + e); });",
            f"http://127.0.0.1:{args.proxy}/proxy.pac")
        urls = {"https://api.example.com/v1": "api.example.com", "https://gateway.icloud.com/": "gateway.icloud.com",
                "http://atsproxy.test/": "atsproxy.test", "https://api.example.com./": "api.example.com."}
        # The CA downloads as the browser receives them: content type and bytes (base64).
        seen["downloads"] = driver.execute_async_script(
            "var done = arguments[arguments.length - 1];"
            "Promise.all(['/ca.cer', '/ca.pem', '/ca.mobileconfig'].map(function (path) {"
            "  return fetch(path).then(function (r) { return r.arrayBuffer().then(function (b) {"
            "    var bytes = new Uint8Array(b), text = ''; for (var i = 0; i < bytes.length; i++) text += String.fromCharCode(bytes[i]);"
            "    return [path, r.headers.get('content-type'), btoa(text)]; }); });"
            "})).then(done, function (e) { done('' + e); });")
        seen["pac"] = {url: driver.execute_script(script + "\nreturn FindProxyForURL(arguments[0], arguments[1]);", url, host)
                       for url, host in urls.items()}
        # The live view: loaded, then watched while the test makes a blocked connection.
        driver.get(f"http://127.0.0.1:{args.web}/")
        print("READY", flush=True)
        sys.stdin.readline()
        started = time.monotonic()
        found = None
        while time.monotonic() - started < 10:
            texts = rows_text(driver)
            if any("blocked.test" in text for text in texts):
                found = time.monotonic() - started
                break
            time.sleep(0.05)
        time.sleep(0.3)  # The plist panel comes with the same update; let it settle.
        driver.save_screenshot(f"{args.out}/live-view.png")
        seen["live"] = {"seconds": found, "rows": rows_text(driver),
                        "plist": driver.execute_script("return document.getElementById('plist').textContent"),
                        "reloaded": driver.execute_script("return performance.navigation.type")}
        seen["live"]["host_page"] = page(driver, f"http://127.0.0.1:{args.web}/host?name=blocked.test", args.out, "live-view-host")
    except WebDriverException as error:
        seen["error"] = str(error)
    finally:
        driver.quit()
    print(json.dumps(seen), flush=True)


main()
